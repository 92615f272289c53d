"""``scipy.linalg`` on duals: ``solve``, ``solve_triangular``, ``inv``, ``det``, ``cholesky``,
``cho_factor``/``cho_solve``, ``lu_factor``/``lu_solve``, ``lu``, ``qr``, ``svd``, ``eigh``,
``eigvalsh``, ``svdvals``, ``pinv``, ``solve_banded``, ``solveh_banded``, ``solve_sylvester``,
``solve_continuous_lyapunov``, ``sqrtm``, ``expm`` and ``logm``.

Late, scipy-valued rules (:mod:`.scipy_late`): the value is scipy's own, bit for bit; the
derivative is that of the same mathematics written with ``numpy.linalg``'s rules where scipy's
function is numpy's (``solve``, ``inv``, ``det``, ``cholesky``, ``eigh``, ``qr``, ``svd``) on the
part of the matrix scipy reads, and of primitives of their own for the others:

- ``solve_sylvester`` (``A X + X B = Q``): both linear maps are Sylvester equations again
  (``A dX + dX B = dQ - dA X - X dB``; the adjoint solves ``A^T Y + Y B^T = X̄``), written
  with the primitive itself: every order;
- ``sqrtm``: ``X dX + dX X = dA``, a Sylvester equation: every order;
- ``expm`` and ``logm``: the Fréchet derivative ``L(A, E)``, the upper right block of
  ``f([[A, E], [0, A]])`` (Mathias; Higham, *Functions of Matrices*); its adjoint is
  ``L(A^T, ·)``. On plain values ``expm`` uses ``scipy.linalg.expm_frechet``; on duals (higher
  orders) the block matrix goes through the primitive again: every order, the block doubling
  in size with each;
- ``lu_factor`` (``P A = L U``, pivots from scipy, a constant): with ``F = L^-1 P dA U^-1``,
  ``dL = L tril(F, -1)`` and ``dU = triu(F) U``: every order.

Choices: where scipy reads one triangle of a matrix (``cholesky``, ``solve``/``inv`` with
``assume_a='sym'``/``'pos'``, ``eigh``, ``solve_triangular``) the gradient lives in that
triangle, the other has gradient 0 (as deltaad's ``numpy.linalg.eigh``); ``cho_factor``'s
result keeps the unread triangle of ``a`` (gradient 1 there), as scipy's value does; singular
vectors and eigenvectors take scipy's signs; structure that ``assume_a=None`` detects does not
change the derivative (the function is the same ``A^-1 b``). Not supported on duals (clear
errors naming the function): generalized ``eigh(a, b)``, ``subset_by_value``, ``qr(mode='raw')``,
``solve(assume_a='banded')``, non-square ``lu``, complex results of ``sqrtm``/``logm``.
"""

import sys

from deltaad._plainnumpy import np

from ..trace import is_dual
from ..trace import value as strip
from .args import as_array, ndim, swap
from .array import Primitive, apply, getitem, shape_of
from .define import jvp_primitive
from .scipy_late import install, late, refuse, refused

MODULE = "scipy.linalg"


def _scipy(name):
    """scipy.linalg's own function ``name`` (the user has imported scipy.linalg by now)."""
    f = getattr(sys.modules[MODULE], name)
    return getattr(f, "deltaad_original", f)


def _all_plain(*xs):
    return not any(is_dual(x) for x in xs)


def _eye(n):
    return np.eye(n)


def _mirror(a, lower):
    """The symmetric matrix scipy sees when it reads the ``lower`` (or upper) triangle of a."""
    if lower:
        return np.tril(a) + swap(np.tril(a, -1))
    return np.triu(a) + swap(np.triu(a, 1))


def _square(name, a, batch=True):
    s = shape_of(a)
    if len(s) < 2 or s[-1] != s[-2] or (not batch and len(s) != 2):
        refuse(name, "a of shape %s" % (s,), "deltaad differentiates it for a square matrix"
               + ("" if batch else " (2-d)"))


_STRUCTURE = {
    None: "gen", "general": "gen", "gen": "gen", "diagonal": "diagonal",
    "tridiagonal": "tridiagonal", "upper triangular": "upper", "lower triangular": "lower",
    "pos": "sym", "positive definite": "sym", "sym": "sym", "symmetric": "sym", "her": "sym",
    "hermitian": "sym",
}


def _structured(name, a, assume_a, lower):
    """The matrix scipy's solver reads in ``a`` given ``assume_a``: the derivative of the
    result lives where scipy reads. ``None`` (scipy detects the structure) is the general
    matrix: the function is the same ``A^-1`` whatever structure it finds."""
    kind = _STRUCTURE.get(assume_a)
    if kind is None:
        refuse(name, "assume_a=%r" % (assume_a,), "use 'gen', 'sym', 'pos', 'diagonal', "
               "'tridiagonal' or a triangular structure")
    n = shape_of(a)[-1]
    if kind == "gen":
        return a
    if kind == "sym":
        return _mirror(a, lower)
    if kind == "upper":
        return np.triu(a)
    if kind == "lower":
        return np.tril(a)
    i = np.arange(n)
    band = np.abs(i[:, None] - i[None, :]) <= (0 if kind == "diagonal" else 1)
    return a * band.astype(float)


# --------------------------------------------------------------------------------------------
# solve, solve_triangular, inv, det


def _solve(original):
    def solve(ref, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
              assume_a=None, transposed=False):
        a, b = as_array(a), as_array(b)
        A = _structured("scipy.linalg.solve", a, assume_a, lower)
        if transposed:
            A = swap(A)
        if ndim(a) > 2 and ndim(b) == ndim(a) - 1:  # a batch of vectors, as scipy reads it
            return np.linalg.solve(A, b[..., None])[..., 0]
        return np.linalg.solve(A, b)

    return solve


def _solve_triangular(original):
    def solve_triangular(ref, a, b, trans=0, lower=False, unit_diagonal=False,
                         overwrite_b=False, check_finite=True):
        a, b = as_array(a), as_array(b)
        _square("scipy.linalg.solve_triangular", a)
        A = np.tril(a) if lower else np.triu(a)
        if unit_diagonal:
            eye = _eye(shape_of(a)[-1])
            A = A * (1.0 - eye) + eye
        if trans in (1, 2, "T", "C"):
            A = swap(A)
        if ndim(a) > 2 and ndim(b) == ndim(a) - 1:
            return np.linalg.solve(A, b[..., None])[..., 0]
        return np.linalg.solve(A, b)

    return solve_triangular


def _inv(original):
    def inv(ref, a, overwrite_a=False, check_finite=True, *, assume_a=None, lower=False):
        a = as_array(a)
        r = np.linalg.inv(_structured("scipy.linalg.inv", a, assume_a, lower))
        if _STRUCTURE.get(assume_a) == "diagonal":
            # scipy (1.17) inverts the diagonal in place and leaves a's other entries there
            off = 1.0 - _eye(shape_of(a)[-1])
            if np.array_equal(np.asarray(ref) * off, np.asarray(strip(a)) * off):
                r = r + a * off
        return r

    return inv


def _det(original):
    def det(ref, a, overwrite_a=False, check_finite=True):
        return np.linalg.det(as_array(a))

    return det


def _dense(ab, lower_width, upper_width):
    """The dense matrix of LAPACK's band storage: ``A[i, j] = ab[u + i - j, j]`` inside the
    band (``-l <= i - j <= u``), 0 outside -- a gather, so the gradient reaches ``ab``'s band
    entries and nothing else (scipy reads nothing else)."""
    rows, n = shape_of(ab)[0], shape_of(ab)[-1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    r = upper_width + i - j
    inside = (i - j >= -upper_width) & (i - j <= lower_width) & (r >= 0) & (r < rows)
    picked = ab[np.where(inside, r, 0), np.broadcast_to(j, (n, n))]
    return picked * inside.astype(float)


def _solve_banded(original):
    def solve_banded(ref, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False,
                     check_finite=True):
        lw, uw = l_and_u
        ab, b = as_array(ab), as_array(b)
        return np.linalg.solve(_dense(ab, int(lw), int(uw)), b)

    return solve_banded


def _solveh_banded(original):
    def solveh_banded(ref, ab, b, overwrite_ab=False, overwrite_b=False, lower=False,
                      check_finite=True):
        ab, b = as_array(ab), as_array(b)
        w = shape_of(ab)[0] - 1
        a = _dense(ab, w, 0) if lower else _dense(ab, 0, w)
        return np.linalg.solve(_mirror(a, lower), b)

    return solveh_banded


# --------------------------------------------------------------------------------------------
# Cholesky


def _cholesky(original):
    def cholesky(ref, a, lower=False, overwrite_a=False, check_finite=True):
        a = as_array(a)
        L = np.linalg.cholesky(_mirror(a, lower))
        return L if lower else swap(L)

    return cholesky


def _cho_factor(original):
    def cho_factor(ref, a, lower=False, overwrite_a=False, check_finite=True):
        a = as_array(a)
        L = np.linalg.cholesky(_mirror(a, lower))
        # scipy leaves the triangle it does not use as it was in a
        if lower:
            return L + np.triu(a, 1), lower
        return swap(L) + np.tril(a, -1), lower

    return cho_factor


def _cho_solve(original):
    def cho_solve(ref, c_and_lower, b, overwrite_b=False, check_finite=True):
        c, lower = c_and_lower
        c, b = as_array(c), as_array(b)
        if lower:
            L = np.tril(c)
            return np.linalg.solve(swap(L), np.linalg.solve(L, b))
        U = np.triu(c)
        return np.linalg.solve(U, np.linalg.solve(swap(U), b))

    return cho_solve


# --------------------------------------------------------------------------------------------
# LU: P A = L U with scipy's pivots


def _lu_impl(a, perm):
    return _scipy("lu_factor")(a)[0]


def _lu_parts(lu):
    n = shape_of(lu)[-1]
    return np.tril(lu, -1) + _eye(n), np.triu(lu)


def _lu_jvp(out, vals, tans, perm):
    L, U = _lu_parts(out)
    pda = getitem(tans[0], (np.asarray(perm),), True) if is_dual(tans[0]) else tans[0][list(perm)]
    F = swap(np.linalg.solve(swap(U), swap(np.linalg.solve(L, pda))))  # L^-1 P dA U^-1
    return np.matmul(L, np.tril(F, -1)) + np.matmul(np.triu(F), U)


LU = jvp_primitive("scipy.linalg.lu_factor", _lu_impl, _lu_jvp)


def _perm_of(piv):
    """The rows ``perm`` with ``a[perm] = L U``, from LAPACK's sequence of row swaps."""
    perm = list(range(len(piv)))
    for i, p in enumerate(np.asarray(piv).tolist()):
        perm[i], perm[p] = perm[p], perm[i]
    return tuple(perm)


def _lu_factor(original):
    def lu_factor(ref, a, overwrite_a=False, check_finite=True):
        a = as_array(a)
        _square("scipy.linalg.lu_factor", a, batch=False)
        piv = ref[1]
        return apply(LU, (a,), {"perm": _perm_of(piv)}), piv

    return lu_factor


def _lu_solve(original):
    def lu_solve(ref, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
        lu, piv = lu_and_piv
        lu, b = as_array(lu), as_array(b)
        if ndim(lu) != 2:
            refuse("scipy.linalg.lu_solve", "a batch of factorizations")
        L, U = _lu_parts(lu)
        perm = np.asarray(_perm_of(piv))
        if trans in (0, "N"):
            return np.linalg.solve(U, np.linalg.solve(L, b[perm]))
        y = np.linalg.solve(swap(L), np.linalg.solve(swap(U), b))
        return y[np.argsort(perm)]

    return lu_solve


def _lu(original):
    def lu(ref, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
        a = as_array(a)
        _square("scipy.linalg.lu", a, batch=False)
        if permute_l:
            p = None
        else:
            p = ref[0]
        av = np.asarray(strip(a))
        piv = _scipy("lu_factor")(av)[1]
        perm = _perm_of(piv)
        L, U = _lu_parts(apply(LU, (a,), {"perm": perm}))
        if permute_l:  # p @ l: the rows of L back in a's order
            return L[np.argsort(np.asarray(perm))], U
        return p, L, U

    return lu


# --------------------------------------------------------------------------------------------
# QR, SVD, eigh: numpy's rules, with scipy's signs


def _signs(ref_cols, cols):
    """``±1`` per column making ``cols`` (numpy's vectors) point as scipy's ``ref_cols``."""
    d = np.sum(np.asarray(ref_cols) * np.asarray(strip(cols)), axis=-2)
    return np.where(d < 0, -1.0, 1.0)


def _qr(original):
    def qr(ref, a, overwrite_a=False, lwork=None, mode="full", pivoting=False,
           check_finite=True):
        name = "scipy.linalg.qr"
        if mode not in ("full", "economic", "r"):
            refuse(name, "mode=%r" % (mode,), "use 'full', 'economic' or 'r'")
        a = as_array(a)
        if ndim(a) != 2:
            refuse(name, "a of %d dimensions" % ndim(a))
        if pivoting:
            p = ref[-1]
            a = a[:, np.asarray(p)]
        q, r = np.linalg.qr(a, mode="reduced" if mode == "economic" else "complete")
        k = min(shape_of(a))
        rref = np.asarray(ref[0] if mode == "r" else ref[1])
        rk = np.asarray(strip(r))
        d = np.where(np.diagonal(rref)[:k] * np.diagonal(rk)[:k] < 0, -1.0, 1.0)
        if shape_of(q)[-1] > k and mode == "full":  # a tall matrix's complement, as scipy's
            qref = np.asarray(ref[0])
            d = np.concatenate([d, _signs(qref[:, k:], getitem(q, (slice(None), slice(k, None)), True))])
        rows = shape_of(r)[0]  # R's rows beyond k are 0: any sign
        r = r * np.concatenate([d, np.ones(max(0, rows - len(d)))])[:rows, None]
        out = (r,) if mode == "r" else (q * d, r)
        return out + (ref[-1],) if pivoting else out

    return qr


def _svd(original):
    def svd(ref, a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
            lapack_driver="gesdd"):
        a = as_array(a)
        if not compute_uv:
            return np.linalg.svd(a, compute_uv=False)
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        du = _signs(ref[0], u)
        u = u * du[..., None, :]
        dv = _signs(np.swapaxes(ref[2], -1, -2), swap(vh))
        vh = vh * dv[..., :, None]
        return u, s, vh

    return svd


def _eigh(original):
    def eigh(ref, a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False,
             overwrite_b=False, type=1, check_finite=True, subset_by_index=None,
             subset_by_value=None, driver=None):
        name = "scipy.linalg.eigh"
        if b is not None:
            refuse(name, "b (the generalized problem)")
        if subset_by_value is not None:
            refuse(name, "subset_by_value", "take the eigenvalues you need from the full result")
        a = as_array(a)
        uplo = "L" if lower else "U"
        sel = slice(None)
        if subset_by_index is not None:
            lo, hi = subset_by_index
            sel = slice(int(lo), int(hi) + 1)
        if eigvals_only:
            return np.linalg.eigvalsh(a, UPLO=uplo)[..., sel]
        w, v = np.linalg.eigh(a, UPLO=uplo)
        w, v = w[..., sel], v[..., sel]
        v = v * _signs(ref[1], v)[..., None, :]
        return w, v

    return eigh


# --------------------------------------------------------------------------------------------
# Sylvester equations and sqrtm


def _sylv_impl(a, b, q):
    return _scipy("solve_sylvester")(a, b, q)


def _sylv_vjp(out, vals, on):
    a, b, _ = vals

    def rule(ct):
        y = apply(SYLVESTER, (swap(a), swap(b), ct))
        return (-np.matmul(y, swap(out)) if on[0] else None,
                -np.matmul(swap(out), y) if on[1] else None, y if on[2] else None)

    return rule


def _sylv_jvp(out, vals, tans):
    a, b, _ = vals
    ta, tb, tq = tans
    r = tq
    if ta is not None:
        r = -np.matmul(ta, out) if r is None else r - np.matmul(ta, out)
    if tb is not None:
        r = -np.matmul(out, tb) if r is None else r - np.matmul(out, tb)
    return apply(SYLVESTER, (a, b, r))


SYLVESTER = Primitive("scipy.linalg.solve_sylvester", _sylv_impl, _sylv_vjp, _sylv_jvp)


def _solve_sylvester(original):
    def solve_sylvester(ref, a, b, q):
        a, b, q = as_array(a), as_array(b), as_array(q)
        for x in (a, b):
            _square("scipy.linalg.solve_sylvester", x, batch=False)
        return apply(SYLVESTER, (a, b, q))

    return solve_sylvester


def _real(name, x):
    if np.iscomplexobj(x):
        raise NotImplementedError(
            "deltaad: %s gives a complex result here (the real matrix has no real result: a "
            "negative eigenvalue?); deltaad differentiates its real results only" % name)
    return x


def _sqrtm_impl(a):
    return _real("scipy.linalg.sqrtm", _scipy("sqrtm")(a))


def _sqrtm_vjp(out, vals, on):
    return lambda ct: (apply(SYLVESTER, (swap(out), swap(out), ct)),)


def _sqrtm_jvp(out, vals, tans):
    return apply(SYLVESTER, (out, out, tans[0]))


SQRTM = Primitive("scipy.linalg.sqrtm", _sqrtm_impl, _sqrtm_vjp, _sqrtm_jvp)
_DEFAULT = object()


def _sqrtm(original):
    def sqrtm(ref, A, disp=_DEFAULT, blocksize=_DEFAULT):
        a = as_array(A)
        _square("scipy.linalg.sqrtm", a, batch=False)
        x = apply(SQRTM, (a,))
        return (x, None) if type(ref) is tuple else x

    return sqrtm


# --------------------------------------------------------------------------------------------
# expm and logm: the Fréchet derivative as a block of f([[A, E], [0, A]])


def _block(f, a, e):
    """``L_f(a, e)``: the upper right block of ``f([[a, e], [0, a]])`` (``e`` scaled to ``a``'s
    size first: the algorithms choose their scaling from the norm of the whole block)."""
    n = shape_of(a)[-1]
    ne = float(np.max(np.abs(np.asarray(strip(e))), initial=0.0))
    if ne == 0.0 and not is_dual(e):
        return np.zeros(np.broadcast_shapes(shape_of(a), shape_of(e)))
    na = float(np.max(np.abs(np.asarray(strip(a))), initial=0.0))
    s = (na if na > 0 else 1.0) / ne if ne > 0 else 1.0  # (a dual 0 still has a tangent)
    z = np.zeros(shape_of(a))
    top = np.concatenate([a, e * s], axis=-1)
    bottom = np.concatenate([z, a], axis=-1)
    m = np.concatenate([top, bottom], axis=-2)
    prim = EXPM if f == "expm" else LOGM
    r = apply(prim, (m,))
    return getitem(r, (Ellipsis, slice(0, n), slice(n, None)), True) / s


def _frechet(f, a, e):
    if f == "expm" and _all_plain(a, e) and np.ndim(a) == 2:
        return _scipy("expm_frechet")(a, e, compute_expm=False)
    return _block(f, a, e)


def _fn_primitive(f):
    def impl(a):
        return _real("scipy.linalg." + f, _scipy(f)(a))

    def vjp(out, vals, on):
        return lambda ct: (_frechet(f, swap(vals[0]), ct),)

    def jvp(out, vals, tans):
        return _frechet(f, vals[0], tans[0])

    return Primitive("scipy.linalg." + f, impl, vjp, jvp)


EXPM = _fn_primitive("expm")
LOGM = _fn_primitive("logm")


def _expm(original):
    def expm(ref, A):
        a = as_array(A)
        _square("scipy.linalg.expm", a)
        return apply(EXPM, (a,))

    return expm


def _logm(original):
    def logm(ref, A, disp=_DEFAULT):
        a = as_array(A)
        _square("scipy.linalg.logm", a, batch=False)
        x = apply(LOGM, (a,))
        return (x, None) if type(ref) is tuple else x

    return logm


def _eigvalsh(original):
    def eigvalsh(ref, a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,
                 check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
        return _eigh(original)(ref, a, b, lower=lower, eigvals_only=True,
                               subset_by_index=subset_by_index, subset_by_value=subset_by_value)

    return eigvalsh


def _svdvals(original):
    def svdvals(ref, a, overwrite_a=False, check_finite=True):
        return np.linalg.svd(as_array(a), compute_uv=False)

    return svdvals


def _pinv(original):
    def pinv(ref, a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
        a = as_array(a)
        av = np.asarray(strip(a))
        rank = int(original(av, atol=atol, rtol=rtol, return_rank=True)[1])
        # numpy's pseudo-inverse at scipy's rank: the constant-rank formula of numpy's rule
        sv = np.linalg.svd(av, compute_uv=False)
        cut = (sv[rank - 1] + sv[rank]) / 2 / sv[0] if 0 < rank < len(sv) else 1e-15
        p = np.linalg.pinv(a, rcond=cut)
        return (p, ref[1]) if return_rank else p

    return pinv


def _lyapunov(original):
    def solve_continuous_lyapunov(ref, a, q):
        a, q = as_array(a), as_array(q)
        _square("scipy.linalg.solve_continuous_lyapunov", a, batch=False)
        return apply(SYLVESTER, (a, swap(a), q))  # A X + X A^T = Q

    return solve_continuous_lyapunov


_TRIANGLE = "the gradient lives in the triangle scipy reads"
_SIGNS = "vectors with scipy's signs; at repeated values as numpy.linalg's"
RULES = {
    "solve": (_solve, "assume_a='sym'/'pos'/triangular/'diagonal'/'tridiagonal': "
                      "the gradient lives where scipy reads; 'banded' raises"),
    "solve_triangular": (_solve_triangular, _TRIANGLE),
    "inv": (_inv, "assume_a as for solve"),
    "det": (_det, "the cofactor matrix, also at a singular matrix"),
    "cholesky": (_cholesky, _TRIANGLE),
    "cho_factor": (_cho_factor, _TRIANGLE + "; the unused triangle is a's, as scipy's"),
    "cho_solve": (_cho_solve, "reads the factor's triangle"),
    "lu_factor": (_lu_factor, "scipy's pivots (a constant); square matrices"),
    "lu_solve": (_lu_solve, "scipy's pivots (a constant)"),
    "lu": (_lu, "scipy's pivots (a constant); square matrices"),
    "qr": (_qr, "scipy's signs; mode='raw' raises"),
    "svd": (_svd, _SIGNS),
    "eigh": (_eigh, _SIGNS + "; " + _TRIANGLE + "; the generalized problem raises"),
    "solve_sylvester": (_solve_sylvester, "every order (Sylvester equations again)"),
    "sqrtm": (_sqrtm, "every order (a Sylvester equation); complex results raise"),
    "expm": (_expm, "every order (Fréchet derivative: expm_frechet, then block matrices)"),
    "logm": (_logm, "every order (Fréchet derivative by block matrices); complex results "
                    "raise"),
}

RULES.update({
    "eigvalsh": (_eigvalsh, _TRIANGLE),
    "solve_banded": (_solve_banded, "the gradient lives in the band scipy reads"),
    "solveh_banded": (_solveh_banded, "the gradient lives in the band scipy reads"),
    "svdvals": (_svdvals, "as numpy.linalg.svd(compute_uv=False)"),
    "pinv": (_pinv, "the constant-rank formula, at the rank scipy's cutoff finds"),
    "solve_continuous_lyapunov": (_lyapunov, "every order (a Sylvester equation)"),
})
# raise an error naming them (what would fail first inside scipy is a LAPACK wrapper's
# conversion)
REFUSED = """eig eigvals eig_banded eigvals_banded eigh_tridiagonal eigvalsh_tridiagonal schur
rsf2csf hessenberg polar qz ordqz ldl lstsq funm cosm sinm tanm coshm sinhm tanhm signm
fractional_matrix_power expm_frechet expm_cond cholesky_banded
cho_solve_banded solve_discrete_lyapunov solve_continuous_are solve_discrete_are null_space orth
qr_multiply qr_update qr_insert qr_delete rq cossin pinvh matrix_balance solve_circulant
solve_toeplitz matmul_toeplitz""".split()

for _name, (_impl, _note) in RULES.items():
    late(MODULE + "." + _name, _impl, _note)
for _name in REFUSED:
    refused(MODULE + "." + _name)
install(MODULE)
