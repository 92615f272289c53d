"""Linear algebra: ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, norms (every
order), ``multi_dot``, the decompositions ``svd``, ``eigh``, ``qr`` and what is built on them
(``svdvals``, ``eigvalsh``, ``pinv``, ``lstsq``, ``cond``, ``matrix_power``).

Every result is numpy's own value: each decomposition is a primitive whose ``impl`` is numpy's
function, and compositions (``norm(x, 2)``, ``cond``, ``matrix_power``) repeat numpy's own
sequence of operations. A decomposition's derivative is written once, as its jvp (the forward
formulas of JAX, Townsend's *Differentiating the Singular Value Decomposition* and Walter and
Lehmann's QR derivative), with numpy functions so that it differentiates again; its vjp is the
jvp's transpose, taken on a small inner tape.

Choices at non-differentiable points:

- ``det`` at a singular matrix has the cofactor matrix as its gradient (as JAX); a norm at the
  zero vector has gradient 0;
- **degenerate spectra**: where two eigenvalues of ``eigh`` (or two singular values of ``svd``)
  are exactly equal, their eigenvectors (singular vectors) are not unique and have no
  derivative: as in JAX, the factor ``1/(w_j - w_i)`` is infinite there and the eigenvectors'
  derivatives are inf/nan. Unlike JAX's, a zero tangent or cotangent stays an exact zero
  against it, so a program that uses only the eigenvalues (singular values) -- or perturbs the
  matrix without splitting the tie -- gets finite derivatives. The eigenvalues' own derivative
  at a tie is ``diag(V^T dA V)`` in the basis numpy returned, as JAX's: the sum over the tied
  group is exact, the individual values (which split along ``dA``) are one choice. The same
  holds for a singular value 0 of a non-square matrix (a factor ``1/s``);
- ``svd(full_matrices=True)`` of a non-square matrix and ``qr(mode="complete")``: the columns
  beyond the rank (a basis of the orthogonal complement) are not unique; deltaad moves them
  with the others without rotating them among themselves (``Q_perp^T dQ_perp = 0``), which
  keeps ``Q`` orthogonal and gives the true derivative of the complement's projector. JAX does
  not differentiate these cases;
- ``eigh``/``eigvalsh`` read one triangle of the matrix, as numpy does (``UPLO``): the gradient
  lives in that triangle, the other has gradient 0 (JAX symmetrizes the input instead);
- ``pinv``, ``lstsq``: the formulas for a matrix of constant rank, the rank numpy's cutoff
  (``rcond``) finds; where the rank changes they are not differentiable;
- ``matrix_rank`` is piecewise constant: derivative 0.
"""

from deltaad._plainnumpy import np

from ..trace import dtype_of, is_dual
from ..trace import value as strip
from .args import (
    as_array, expand_shape, ndim, no_out, normalize_axis_tuple, np_fn, swap, unsupported,
)
from .array import as_ndarray, Primitive, apply, broadcast, getitem, reshape, shape_of, unbroadcast
from .define import defconst, jvp_primitive, register
from .elementwise import absolute, elementwise_primitive, power, where
from .products import matmul
from .reductions import amax, amin, sum_
from .shape import moveaxis, ravel


def _solve_vjp(out, vals, on):
    a, b = vals
    sa, sb = shape_of(a), shape_of(b)
    vec = len(sb) == 1
    oa, ob = on
    x = out if oa else None

    def rule(ct):
        if vec:
            ct2 = reshape(ct, shape_of(ct) + (1,))
            gb2 = np.linalg.solve(swap(a), ct2)
            gb = reshape(unbroadcast(gb2, sb + (1,)), sb) if ob else None
            ga = unbroadcast(-np.matmul(gb2, swap(reshape(x, shape_of(x) + (1,)))), sa) if oa else None
            return ga, gb
        gb2 = np.linalg.solve(swap(a), ct)
        return (unbroadcast(-np.matmul(gb2, swap(x)), sa) if oa else None, unbroadcast(gb2, sb) if ob else None)

    return rule


def _solve_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    vec = len(shape_of(b)) == 1
    x2 = reshape(out, shape_of(out) + (1,)) if vec else out
    rhs = None
    if tb is not None:
        rhs = reshape(broadcast(tb, shape_of(out)), shape_of(out) + (1,)) if vec else broadcast(tb, shape_of(out))
    if ta is not None:
        u = -np.matmul(ta, x2)
        rhs = u if rhs is None else rhs + u
    r = np.linalg.solve(a, rhs)
    return reshape(r, shape_of(out)) if vec else r


SOLVE = Primitive("linalg.solve", np.linalg.solve, _solve_vjp, _solve_jvp)


@register(np.linalg.solve)
def solve(a, b):
    return apply(SOLVE, (as_array(a), as_array(b)))


def _inv_vjp(out, vals, on):
    def rule(ct):
        yt = swap(out)
        return (-np.matmul(yt, np.matmul(ct, yt)),)

    return rule


INV = Primitive("linalg.inv", np.linalg.inv, _inv_vjp, lambda out, vals, tans: -np.matmul(out, np.matmul(tans[0], out)))


@register(np.linalg.inv)
def inv(a):
    return apply(INV, (as_array(a),))


def _trace_last(m):
    return np.trace(m, axis1=-2, axis2=-1)


def _expand2(c):
    return reshape(c, shape_of(c) + (1, 1))


def _det_cofactor(a, out):
    """d det(a) / da: the cofactor matrix adj(a)^T, which is det(a) inv(a)^T where a is
    invertible. At a singular matrix inv fails but the cofactor exists (JAX gives it); from the
    SVD a = U S V^T it is det(U) det(V) U diag(prod_{j != i} s_j) V^T. That path works on plain
    values only: a second derivative there is a clear error."""
    try:
        return _expand2(out) * swap(np.linalg.inv(a))
    except np.linalg.LinAlgError:
        if is_dual(a):
            raise NotImplementedError(
                "deltaad: second and higher derivatives of numpy.linalg.det at a singular "
                "matrix are not supported") from None
    u, sv, vh = np.linalg.svd(a)
    n = sv.shape[-1]
    others = np.where(np.eye(n, dtype=bool), 1.0, sv[..., None, :])  # row i: s with s_i := 1
    p = np.prod(others, axis=-1)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (sign[..., None, None] * (u * p[..., None, :]) @ vh).astype(dtype_of(out), copy=False)


def _det_vjp(out, vals, on):
    a = vals[0]

    def rule(ct):
        return (_expand2(ct) * _det_cofactor(a, out),)

    return rule


def _det_jvp(out, vals, tans):
    a, t = vals[0], tans[0]
    try:
        return out * _trace_last(np.linalg.solve(a, t))
    except np.linalg.LinAlgError:  # singular: d det = sum(cofactor * da)
        return np.sum(_det_cofactor(a, out) * t, axis=(-2, -1))


DET = Primitive("linalg.det", np.linalg.det, _det_vjp, _det_jvp)


@register(np.linalg.det, note="the cofactor matrix, also at a singular matrix (second derivatives "
                               "there raise)")
def det(a):
    return apply(DET, (as_array(a),))


def _logdet_impl(a):
    return np.linalg.slogdet(a)[1]


def _logdet_vjp(out, vals, on):
    a = vals[0]

    def rule(ct):
        return (_expand2(ct) * swap(np.linalg.inv(a)),)

    return rule


LOGDET = Primitive("linalg.slogdet", _logdet_impl, _logdet_vjp, lambda out, vals, tans: _trace_last(np.linalg.solve(vals[0], tans[0])))
_SlogdetResult = type(np.linalg.slogdet(np.eye(1)))


@register(np.linalg.slogdet)
def slogdet(a):
    x = as_array(a)
    sign = np.linalg.slogdet(as_ndarray(strip(x)))[0]
    logdet = apply(LOGDET, (x,))
    try:
        return _SlogdetResult(sign, logdet)
    except TypeError:  # pragma: no cover
        return sign, logdet


def _phi(x):
    """Lower triangle with the diagonal halved (the projection in the Cholesky rules)."""
    n = shape_of(x)[-1]
    mask = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)
    return x * mask


def _sym(x):
    return 0.5 * (x + swap(x))


def _chol_vjp(out, vals, on):
    L = out

    def rule(ct):
        Lt = swap(L)
        p = _phi(np.matmul(Lt, ct))
        z = swap(np.linalg.solve(Lt, swap(np.linalg.solve(Lt, p))))
        return (_sym(z),)

    return rule


def _chol_jvp(out, vals, tans):
    L = out
    s = _sym(tans[0])
    m = swap(np.linalg.solve(L, swap(np.linalg.solve(L, s))))
    return np.matmul(L, _phi(m))


CHOLESKY = Primitive("linalg.cholesky", np.linalg.cholesky, _chol_vjp, _chol_jvp)


@register(np.linalg.cholesky, numpy_value=True)
def cholesky(a, /, *, upper=False):
    L = apply(CHOLESKY, (as_array(a),))
    return swap(L) if upper else L


def _norm2_impl(v, axis, keepdims):
    return np.sqrt(np.sum(v * v, axis=axis, keepdims=keepdims))


def _norm2_weights(x, out, axis, keepdims):
    o = out if keepdims else reshape(out, expand_shape(shape_of(x), axis))
    zero = as_ndarray(strip(o)) == 0
    return np.where(zero, 0.0, x / np.where(zero, 1.0, o))


def _norm2_vjp(out, vals, on, axis, keepdims):
    w = _norm2_weights(vals[0], out, axis, keepdims)
    ks = expand_shape(shape_of(vals[0]), axis)

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        return (g * w,)

    return rule


def _norm2_jvp(out, vals, tans, axis, keepdims):
    w = _norm2_weights(vals[0], out, axis, keepdims)
    return np.sum(tans[0] * w, axis=axis, keepdims=keepdims)


NORM2 = Primitive("linalg.norm", _norm2_impl, _norm2_vjp, _norm2_jvp)


def _norm2(x, axes, keepdims):
    return apply(NORM2, (x,), {"axis": axes, "keepdims": bool(keepdims)})


def _vector_norm(x, ord, ax, keepdims):
    if ord is None or ord == 2:
        return _norm2(x, (ax,), keepdims)
    if ord == np.inf:
        return amax(absolute(x), axis=ax, keepdims=keepdims)
    if ord == -np.inf:
        return amin(absolute(x), axis=ax, keepdims=keepdims)
    if ord == 0:
        return np.sum(as_ndarray(strip(x)) != 0, axis=ax, keepdims=keepdims).astype(float)
    if ord == 1:
        return sum_(absolute(x), axis=ax, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError("Invalid norm order '%s' for vectors" % ord)
    s = sum_(power(absolute(x), float(ord)), axis=ax, keepdims=keepdims)
    zero = as_ndarray(strip(s)) == 0
    if not zero.any():
        return power(s, 1.0 / ord)
    # At the zero vector the norm is 0 with gradient 0 (the documented choice), not
    # (1/p) * 0**(1/p - 1) * 0 = inf * 0: select 0 there and give the other branch a safe sum.
    return where(zero, 0.0, power(where(zero, 1.0, s), 1.0 / ord))


@register(np.linalg.norm, note="0 at the zero vector; ord=2, -2: the cotangent is split among "
                               "tied extreme singular values", numpy_value=True)
def norm(x, ord=None, axis=None, keepdims=False):
    x = as_array(x)
    nd = ndim(x)
    if axis is None:
        if ord is None:
            r = _norm2(x, tuple(range(nd)), keepdims)
            return r
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ValueError("Improper number of dimensions to norm.")
    elif not isinstance(axis, (tuple, list)):
        axis = (axis,)
    axis = normalize_axis_tuple(axis, nd)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis[0], keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = axis
    if ord is None or ord == "fro" or ord == "f":
        return _norm2(x, axis, keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        red = amax if ord in (1, np.inf) else amin
        ab = absolute(x)
        if ord in (1, -1):
            if col > row:
                col -= 1
            r = red(sum_(ab, axis=row), axis=col)
        else:
            if row > col:
                row -= 1
            r = red(sum_(ab, axis=col), axis=row)
        if keepdims:
            r = reshape(r, expand_shape(shape_of(x), axis))
        return r
    if ord in (2, -2, "nuc"):  # numpy's _multi_svd_norm: the singular values, reduced
        sv = svdvals(moveaxis(x, (row, col), (-2, -1)))
        r = {2: amax, -2: amin, "nuc": sum_}[ord](sv, axis=-1)
        if keepdims:
            r = reshape(r, expand_shape(shape_of(x), axis))
        return r
    raise ValueError("Invalid norm order for matrices.")


if hasattr(np.linalg, "vector_norm"):

    @register(np.linalg.vector_norm, note="0 at the zero vector", numpy_value=True)
    def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
        x = as_array(x)
        if axis is None:
            r = _vector_norm(ravel(x), ord, 0, False)
            return reshape(r, (1,) * ndim(x)) if keepdims else r
        axes = normalize_axis_tuple(axis, ndim(x))
        if len(axes) == 1:
            return _vector_norm(x, ord, axes[0], keepdims)
        if ord == 2:
            return _norm2(x, axes, keepdims)
        unsupported("linalg.vector_norm", "ord=%r with several axes" % (ord,))

    @register(np.linalg.matrix_norm, note="0 at the zero matrix", numpy_value=True)
    def matrix_norm(x, /, *, keepdims=False, ord="fro"):
        return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@register(np.linalg.multi_dot, numpy_value=True)
def multi_dot(arrays, *, out=None):
    no_out("linalg.multi_dot", out)
    arrays = list(arrays)
    r = arrays[0]
    for b in arrays[1:]:
        r = matmul(as_array(r), as_array(b))
    return r


register(np_fn("matmul", np.linalg))(lambda x1, x2, /: matmul(as_array(x1), as_array(x2)))


# ============================================================================================


# --------------------------------------------------------------------------------------------
# Decompositions: a jvp each; the vjp is its transpose


def _pack(parts, batch):
    """Several arrays with the batch shape ``batch`` as one: their cores flattened and joined
    along the last axis (a decomposition's outputs are one primitive's result)."""
    return np.concatenate([reshape(p, batch + (-1,)) for p in parts], axis=-1)


def _unpack(x, batch, cores):
    out = []
    o = 0
    for c in cores:
        n = int(np.prod(c, dtype=np.int64))
        out.append(reshape(getitem(x, (Ellipsis, slice(o, o + n)), True), batch + c))
        o += n
    return out


def _inverse(d):
    """``1 / d``, IEEE: infinite where ``d`` is 0 (a degenerate spectrum)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / d


def _gaps(w):
    """``F[..., i, j] = 1 / (w_j - w_i)``, 0 on the diagonal; infinite where two values tie."""
    eye = np.eye(shape_of(w)[-1])
    return _inverse(w[..., None, :] - w[..., :, None] + eye) - eye


# ``a * b`` where a zero factor gives an exact zero even against an infinite one: at a
# degenerate spectrum the factors 1/(w_j - w_i) are infinite, and a tangent or cotangent that is
# 0 there (eigenvalues only, or a perturbation that does not split the tie) must stay 0.
def _zero_safe_multiply(a, b):
    """The value: ``a * b`` with 0 where a factor is 0 (forward mode computes its tangents as
    values; a tie-preserving tangent must not turn into nan there)."""
    with np.errstate(invalid="ignore"):
        r = np.multiply(a, b)
    if np.all(np.isfinite(r)):
        return r
    return np.where((as_ndarray(a) == 0) | (as_ndarray(b) == 0), 0.0, r)


_ZERO_SAFE_MUL = elementwise_primitive("multiply (zero-safe)", _zero_safe_multiply,
                                       (lambda a, b: b, lambda a, b: a), edges=True)


def _zmul(a, b):
    with np.errstate(invalid="ignore"):
        return apply(_ZERO_SAFE_MUL, (a, b))


def _diag_part(m):
    return np.diagonal(m, axis1=-2, axis2=-1)


def _complement(q, dq):
    """The tangent of ``q``'s complement ``q_perp`` (columns beyond ``q``'s): it moves with
    ``q`` and does not rotate within itself, ``dq_perp = -q (dq^T q_perp)``."""
    return lambda q_perp: -np.matmul(q, np.matmul(swap(dq), q_perp))


# svd -------------------------------------------------------------------------------------


def _svd_cores(shape, full):
    m, n = shape[-2:]
    k = min(m, n)
    return ((m, m if full else k), (k,), (n if full else k, n))


def _svd_impl(a, full, hermitian):
    u, sv, vh = np.linalg.svd(a, full_matrices=full, hermitian=hermitian)
    return _pack([u, sv, vh], a.shape[:-2])


def _svd_jvp(out, vals, tans, full, hermitian):
    a = vals[0]
    da = tans[0]
    shape = shape_of(a)
    batch = shape[:-2]
    m, n = shape[-2:]
    k = min(m, n)
    u, sv, vh = _unpack(out, batch, _svd_cores(shape, full))
    u1 = getitem(u, (Ellipsis, slice(0, k)), True)
    vh1 = getitem(vh, (Ellipsis, slice(0, k), slice(None)), True)
    v1 = swap(vh1)
    ds_mat = np.matmul(swap(u1), np.matmul(da, v1))
    ds = _diag_part(ds_mat)
    srow = sv[..., None, :]
    f = _gaps(sv * sv)  # 1 / (s_j^2 - s_i^2)
    dss = srow * ds_mat
    sds = swap(srow) * ds_mat
    du = np.matmul(u1, _zmul(dss + swap(dss), f))
    dv = np.matmul(v1, _zmul(sds + swap(sds), f))
    if m > n:
        dav = np.matmul(da, v1)
        du = du + _zmul(dav - np.matmul(u1, np.matmul(swap(u1), dav)), _inverse(srow))
    elif n > m:
        dahu = np.matmul(swap(da), u1)
        dv = dv + _zmul(dahu - np.matmul(v1, np.matmul(swap(v1), dahu)), _inverse(srow))
    if full and m > n:
        du = np.concatenate([du, _complement(u1, du)(getitem(u, (Ellipsis, slice(k, None)), True))],
                            axis=-1)
    if full and n > m:
        v_perp = swap(getitem(vh, (Ellipsis, slice(k, None), slice(None)), True))
        dv = np.concatenate([dv, _complement(v1, dv)(v_perp)], axis=-1)
    return _pack([du, ds, swap(dv)], batch)


SVD = jvp_primitive("linalg.svd", _svd_impl, _svd_jvp)
_SVDResult = type(np.linalg.svd(np.eye(1)))


def _svdvals_jvp(out, vals, tans, hermitian, impl):
    u, _, vh = np.linalg.svd(vals[0], full_matrices=False)
    return np.sum(u * np.matmul(tans[0], swap(vh)), axis=-2)


SVDVALS = jvp_primitive("linalg.svd(compute_uv=False)",
                        lambda a, hermitian, impl: impl(a, hermitian), _svdvals_jvp)


def _svd_values(a, hermitian):
    return np.linalg.svd(a, compute_uv=False, hermitian=hermitian)


def svdvals(x, hermitian=False, impl=_svd_values):
    return apply(SVDVALS, (as_array(x),), {"hermitian": hermitian, "impl": impl})


_DEGENERATE = ("singular vectors at repeated singular values: inf/nan as JAX, but exact zeros "
               "stay zero (singular values only: finite); full_matrices=True: the extra columns "
               "do not rotate among themselves")


@register(np.linalg.svd, note=_DEGENERATE)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    x = as_array(a)
    if ndim(x) < 2:
        raise np.linalg.LinAlgError("%d-dimensional array given. Array must be at least "
                                    "two-dimensional" % ndim(x))
    if not compute_uv:
        return svdvals(x, hermitian)
    shape = shape_of(x)
    p = apply(SVD, (x,), {"full": bool(full_matrices), "hermitian": bool(hermitian)})
    return _SVDResult(*_unpack(p, shape[:-2], _svd_cores(shape, bool(full_matrices))))


if hasattr(np.linalg, "svdvals"):
    @register(np.linalg.svdvals)
    def _np_svdvals(x, /):
        return svdvals(x, False, lambda a, hermitian: np.linalg.svdvals(a))


# eigh ------------------------------------------------------------------------------------


def _triangle_sym(t, uplo):
    """The symmetric matrix numpy's eigh sees in ``t``: its ``uplo`` triangle mirrored."""
    if uplo == "L":
        low = np.tril(t)
        return low + swap(np.tril(t, -1))
    up = np.triu(t)
    return up + swap(np.triu(t, 1))


def _eigh_impl(a, uplo):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return _pack([w, v], a.shape[:-2])


def _eigh_jvp(out, vals, tans, uplo):
    shape = shape_of(vals[0])
    n = shape[-1]
    w, v = _unpack(out, shape[:-2], ((n,), (n, n)))
    vav = np.matmul(swap(v), np.matmul(_triangle_sym(tans[0], uplo), v))
    dv = np.matmul(v, _zmul(vav, _gaps(w)))
    return _pack([_diag_part(vav), dv], shape[:-2])


EIGH = jvp_primitive("linalg.eigh", _eigh_impl, _eigh_jvp)
_EighResult = type(np.linalg.eigh(np.eye(1)))


def _uplo(UPLO):
    u = str(UPLO).upper()
    if u not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return u


@register(np.linalg.eigh, note="eigenvectors at repeated eigenvalues: inf/nan as JAX, but exact "
                               "zeros stay zero (eigenvalues only: finite); the gradient lives in "
                               "the UPLO triangle numpy reads")
def eigh(a, UPLO="L"):
    x = as_array(a)
    shape = shape_of(x)
    n = shape[-1]
    p = apply(EIGH, (x,), {"uplo": _uplo(UPLO)})
    return _EighResult(*_unpack(p, shape[:-2], ((n,), (n, n))))


def _eigvalsh_jvp(out, vals, tans, uplo):
    v = np.linalg.eigh(vals[0], UPLO=uplo)[1]
    return np.sum(v * np.matmul(_triangle_sym(tans[0], uplo), v), axis=-2)


EIGVALSH = jvp_primitive("linalg.eigvalsh", lambda a, uplo: np.linalg.eigvalsh(a, UPLO=uplo),
                         _eigvalsh_jvp)


@register(np.linalg.eigvalsh, note="the gradient lives in the UPLO triangle numpy reads")
def eigvalsh(a, UPLO="L"):
    return apply(EIGVALSH, (as_array(a),), {"uplo": _uplo(UPLO)})


# qr --------------------------------------------------------------------------------------


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
    return _pack([q, r], a.shape[:-2])


def _qr_square_or_tall(q, r, dx):
    """dq, dr for the reduced QR of a tall or square matrix (JAX's formula)."""
    dx_rinv = swap(np.linalg.solve(swap(r), swap(dx)))  # dx r^-1
    qt_dx_rinv = np.matmul(swap(q), dx_rinv)
    low = np.tril(qt_dx_rinv, -1)
    do = low - swap(low)  # skew-symmetric
    dq = np.matmul(q, do - qt_dx_rinv) + dx_rinv
    dr = np.matmul(qt_dx_rinv - do, r)
    return dq, dr


def _qr_tangents(a, da, q, r, mode):
    """(dq, dr) of numpy's ``qr(a, mode)`` (reduced, complete or r) along ``da``."""
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    if m >= n:
        q1 = getitem(q, (Ellipsis, slice(0, n)), True)
        r1 = getitem(r, (Ellipsis, slice(0, n), slice(None)), True)
        dq, dr = _qr_square_or_tall(q1, r1, da)
        if mode == "complete" and m > n:
            dq = np.concatenate([dq, _complement(q1, dq)(getitem(q, (Ellipsis, slice(n, None)), True))],
                                axis=-1)
            dr = np.concatenate([dr, np.zeros(shape_of(dr)[:-2] + (m - n, n))], axis=-2)
        return dq, dr
    # wide: a = q [r1 r2] with r1 square: q, r1 are the QR of a's first k columns
    r1 = getitem(r, (Ellipsis, slice(None), slice(0, k)), True)
    dq, dr1 = _qr_square_or_tall(q, r1, getitem(da, (Ellipsis, slice(0, k)), True))
    a2 = getitem(a, (Ellipsis, slice(k, None)), True)
    da2 = getitem(da, (Ellipsis, slice(k, None)), True)
    dr2 = np.matmul(swap(dq), a2) + np.matmul(swap(q), da2)
    return dq, np.concatenate([dr1, dr2], axis=-1)


def _qr_jvp(out, vals, tans, mode):
    a = vals[0]
    shape = shape_of(a)
    if mode == "r":
        q, r = np.linalg.qr(a)
        return _qr_tangents(a, tans[0], q, out, mode)[1]
    q, r = _unpack(out, shape[:-2], _qr_cores(shape, mode))
    return _pack(list(_qr_tangents(a, tans[0], q, r, mode)), shape[:-2])


QR = jvp_primitive("linalg.qr", _qr_impl, _qr_jvp)
_QRResult = type(np.linalg.qr(np.eye(1)))


@register(np.linalg.qr, note="mode='complete': the extra columns of Q do not rotate among "
                             "themselves")
def qr(a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError("deltaad: numpy.linalg.qr(..., mode=%r) on dual numbers is not "
                                  "supported (use 'reduced', 'complete' or 'r')" % (mode,))
    x = as_array(a)
    shape = shape_of(x)
    p = apply(QR, (x,), {"mode": mode})
    if mode == "r":
        return p
    return _QRResult(*_unpack(p, shape[:-2], _qr_cores(shape, mode)))


# pinv, lstsq -----------------------------------------------------------------------------


def _eye_rows(m):
    return np.eye(shape_of(m)[-2])


def _pinv_tangent(a, p, da):
    """The derivative of the pseudo-inverse ``p`` of ``a`` along ``da`` at constant rank
    (Golub and Pereyra): ``-p da p + p p^T da^T (I - a p) + (I - p a) da^T p^T p``."""
    dat = swap(da)
    t = -np.matmul(p, np.matmul(da, p))
    t = t + np.matmul(np.matmul(p, swap(p)), np.matmul(dat, _eye_rows(a) - np.matmul(a, p)))
    return t + np.matmul(_eye_rows(p) - np.matmul(p, a), np.matmul(dat, np.matmul(swap(p), p)))


def _pinv_impl(a, kw):
    return np.linalg.pinv(a, **dict(kw))


PINV = jvp_primitive("linalg.pinv", _pinv_impl,
                     lambda out, vals, tans, kw: _pinv_tangent(vals[0], out, tans[0]))


@register(np.linalg.pinv, note="the constant-rank formula (the rank numpy's cutoff finds)")
def pinv(a, rcond=None, hermitian=False, **kwargs):
    kw = dict(kwargs, hermitian=bool(hermitian))
    if rcond is not None:
        kw["rcond"] = rcond
    return apply(PINV, (as_array(a),), {"kw": tuple(sorted(kw.items()))})


def _lstsq_impl(a, b, part, rcond):
    return as_ndarray(np.linalg.lstsq(a, b, rcond=rcond)[part])


def _lstsq_pinv(a, rcond):
    m, n = shape_of(a)[-2:]
    cut = np.finfo(dtype_of(a)).eps * max(m, n) if rcond is None or rcond == -1 else rcond
    return np.linalg.pinv(a, rcond=cut)


def _lstsq_jvp(out, vals, tans, part, rcond):
    a, b = vals
    ta, tb = tans
    if part == 3:  # the singular values of a
        if ta is None:
            return np.zeros(shape_of(out))
        return _svdvals_jvp(None, (a,), (ta,), False, None)
    if part == 0:  # x = pinv(a) b
        p = _lstsq_pinv(a, rcond)
        t = None
        if ta is not None:
            t = np.matmul(_pinv_tangent(a, p, ta), b)
        if tb is not None:
            u = np.matmul(p, tb)
            t = u if t is None else t + u
        return t
    # residuals: |b - a x|^2 per column, where a^T (b - a x) = 0 (full column rank)
    x = np.linalg.lstsq(a, b, rcond=rcond)[0]
    if shape_of(out)[0] == 0:
        return np.zeros(shape_of(out))
    vec = len(shape_of(b)) == 1
    res = b - np.matmul(a, x)
    d = None
    if ta is not None:
        d = -np.matmul(ta, x)
    if tb is not None:
        d = tb if d is None else d + tb
    r = 2.0 * np.sum(res * d, axis=0)
    return reshape(r, (1,)) if vec else r


LSTSQ = jvp_primitive("linalg.lstsq", _lstsq_impl, _lstsq_jvp)


@register(np.linalg.lstsq, note="the constant-rank formula; rank is a constant")
def lstsq(a, b, rcond=None):
    a = as_array(a)
    b = as_array(b)
    av, bv = as_ndarray(strip(a)), as_ndarray(strip(b))
    rank = np.linalg.lstsq(av, bv, rcond=rcond)[2]
    parts = [apply(LSTSQ, (a, b), {"part": k, "rcond": rcond}) for k in (0, 1, 3)]
    return parts[0], parts[1], rank, parts[2]


# built from the above: cond, matrix_power, matrix_rank -------------------------------------


@register(np.linalg.cond, note="from the singular values (p = None, 2, -2) or the norms of x "
                               "and its inverse, as numpy")
def cond(x, p=None):
    x = as_array(x)
    if p is None or p in (2, -2):
        sv = svdvals(x)
        first = getitem(sv, (Ellipsis, 0), True)
        last = getitem(sv, (Ellipsis, -1), True)
        with np.errstate(all="ignore"):
            r = last / first if p == -2 else first / last
    else:
        with np.errstate(all="ignore"):
            r = norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))
    rv = as_ndarray(strip(r))
    nan = np.isnan(rv) & ~np.isnan(as_ndarray(strip(x))).any(axis=(-2, -1))
    if nan.any():  # numpy turns nan into inf unless x had a nan: a constant there
        r = where(nan, np.inf, r)
    return r


@register(np.linalg.matrix_power)
def matrix_power(a, n):
    """numpy's own sequence of products (binary powering), so the value has numpy's bits."""
    x = as_array(a)
    try:
        n = int(as_ndarray(n).__index__()) if not isinstance(n, int) else n
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if n == 0:
        return np.broadcast_to(np.eye(shape[-1], dtype=dtype_of(x)), shape).copy()
    if n < 0:
        x = inv(x)
        n = -n
    if n == 1:
        return x
    if n == 2:
        return matmul(x, x)
    if n == 3:
        return matmul(matmul(x, x), x)
    z = result = None
    while n > 0:
        z = x if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


defconst(np.linalg.matrix_rank)
