"""Linear algebra: ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, norms, ``multi_dot``.

Choices at non-differentiable points: ``det`` at a singular matrix has the cofactor matrix as
its gradient (as JAX); a norm at the zero vector has gradient 0.
"""

import numpy as np

from ..trace import dtype_of, is_dual
from ..trace import value as strip
from .args import (
    as_array, expand_shape, ndim, no_out, normalize_axis_tuple, np_fn, swap, unsupported,
)
from .array import Primitive, apply, broadcast, reshape, shape_of, unbroadcast
from .define import register
from .elementwise import absolute, power, where
from .products import matmul
from .reductions import amax, amin, sum_
from .shape import ravel


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
    sign = np.linalg.slogdet(np.asarray(strip(x)))[0]
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
    zero = np.asarray(strip(o)) == 0
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
        return np.sum(np.asarray(strip(x)) != 0, axis=ax, keepdims=keepdims).astype(float)
    if ord == 1:
        return sum_(absolute(x), axis=ax, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError("Invalid norm order '%s' for vectors" % ord)
    s = sum_(power(absolute(x), float(ord)), axis=ax, keepdims=keepdims)
    zero = np.asarray(strip(s)) == 0
    if not zero.any():
        return power(s, 1.0 / ord)
    # At the zero vector the norm is 0 with gradient 0 (the documented choice), not
    # (1/p) * 0**(1/p - 1) * 0 = inf * 0: select 0 there and give the other branch a safe sum.
    return where(zero, 0.0, power(where(zero, 1.0, s), 1.0 / ord))


@register(np.linalg.norm, note="0 at the zero vector", numpy_value=True)
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
    raise NotImplementedError("deltaad: numpy.linalg.norm(..., ord=%r) for matrices (needs an SVD) is not supported" % (ord,))


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
