"""Reductions: sums, means, extrema, variances, products, cumulative sums and products, and the
ufunc methods ``reduce`` and ``accumulate`` that are the same operations.

Choices at non-differentiable points: ``max``/``min`` split the cotangent evenly among tied
extrema; ``std`` has gradient 0 where the spread is 0 (as a norm at the zero vector); ``prod``
and ``cumprod`` are exact where a factor is zero (no division by it).
"""

import numpy as np

from ..trace import dtype_of
from ..trace import value as strip
from . import registry
from .args import (
    NoValue, axes_of, cast, check_novalue, expand_shape, float_dtype, ndim, no_out, np_fn,
    normalize_axis_index, unsupported,
)
from .array import Primitive, apply, operand_or_raise, reshape, shape_of
from .define import numpy_valued, register
from .elementwise import astype
from .shape import diagonal, ravel, transpose


def _sum_impl(v, axis, keepdims):
    return np.sum(v, axis=axis, keepdims=keepdims)


def _sum_vjp(out, vals, on, axis, keepdims):
    s = shape_of(vals[0])
    ks = expand_shape(s, axis)

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        return (np.broadcast_to(g, s),)

    return rule


def _sum_jvp(out, vals, tans, axis, keepdims):
    return np.sum(tans[0], axis=axis, keepdims=keepdims)


SUM = Primitive("sum", _sum_impl, _sum_vjp, _sum_jvp)


def sum_(x, axis=None, keepdims=False):
    x = operand_or_raise(x)
    return apply(SUM, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims)})


@register(np.sum)
def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
    no_out("sum", out)
    check_novalue("sum", initial=initial, where=where)
    float_dtype("sum", dtype)
    r = sum_(a, axis, keepdims)
    return r if dtype is None else astype(r, dtype)


@register(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=NoValue):
    no_out("mean", out)
    check_novalue("mean", where=where)
    float_dtype("mean", dtype)
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = axes_of(axis, len(s))
    n = int(np.prod([s[i] for i in axes], dtype=np.int64))
    r = apply(SUM, (x,), {"axis": axes, "keepdims": bool(keepdims)})
    r = r / n if n else r * np.nan
    return r if dtype is None else astype(r, dtype)


def _choose_impl(v, axis, keepdims, f):
    return f(v, axis=axis, keepdims=keepdims)


def _choose_weights(x, out, axis, keepdims):
    xv = np.asarray(strip(x))
    ov = np.asarray(strip(out))
    if not keepdims:
        ov = ov.reshape(expand_shape(xv.shape, axis))
    mask = (xv == ov) | (np.isnan(xv) & np.isnan(ov))
    return (mask / np.sum(mask, axis=axis, keepdims=True)).astype(xv.dtype if xv.dtype.kind == "f" else float)


def _choose_vjp(out, vals, on, axis, keepdims, f):
    x = vals[0]
    w = _choose_weights(x, out, axis, keepdims)
    ks = expand_shape(shape_of(x), axis)

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        return (g * w,)

    return rule


def _choose_jvp(out, vals, tans, axis, keepdims, f):
    w = _choose_weights(vals[0], out, axis, keepdims)
    return np.sum(tans[0] * w, axis=axis, keepdims=keepdims)


CHOOSE = Primitive("max/min", _choose_impl, _choose_vjp, _choose_jvp)


def _chooser(name, f):
    def reduce(a, axis=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
        no_out(name, out)
        check_novalue(name, initial=initial, where=where)
        x = operand_or_raise(a)
        return apply(CHOOSE, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims), "f": f})

    reduce.__name__ = name
    return reduce


_TIES = "the cotangent is split evenly among tied extrema"
amax = register(np.max, np.amax, note=_TIES)(_chooser("max", np.max))
amin = register(np.min, np.amin, note=_TIES)(_chooser("min", np.min))


@register(np.ptp, note=_TIES)
def ptp(a, axis=None, out=None, keepdims=False):
    return amax(a, axis, out, keepdims) - amin(a, axis, out, keepdims)


def _centered(x, axis):
    """``x`` minus its mean over ``axis`` (kept): what the moments' derivatives are made of."""
    n = int(np.prod([shape_of(x)[i] for i in axis], dtype=np.int64))
    return x - np.sum(x, axis=axis, keepdims=True) / max(n, 1), n


def _moment_weights(x, out, axis, ddof, keepdims, std):
    """d var / dx = 2 c / (n - ddof) and d std / dx = c / ((n - ddof) std), c the centered x;
    for std, 0 where the spread is 0 (the documented choice, as for a norm at 0)."""
    c, n = _centered(x, axis)
    k = n - ddof
    if k <= 0:
        return c * np.nan
    if not std:
        return c * (2.0 / k)
    o = out if keepdims else reshape(out, expand_shape(shape_of(x), axis))
    zero = np.asarray(strip(o)) == 0
    return np.where(zero, 0.0, c / (k * np.where(zero, 1.0, o)))


def _moment_vjp(out, vals, on, axis, ddof, keepdims, std):
    w = _moment_weights(vals[0], out, axis, ddof, keepdims, std)
    ks = expand_shape(shape_of(vals[0]), axis)

    def rule(ct):
        return ((ct if keepdims else reshape(ct, ks)) * w,)

    return rule


def _moment_jvp(out, vals, tans, axis, ddof, keepdims, std):
    w = _moment_weights(vals[0], out, axis, ddof, keepdims, std)
    return np.sum(tans[0] * w, axis=axis, keepdims=keepdims)


# var and std are primitives: their values are numpy's own (a composition of sums would differ
# in the last bits), and std's derivative where the spread is 0 is a choice, not 0 * inf.
MOMENT = Primitive(
    "var/std",
    lambda v, axis, ddof, keepdims, std: (np.std if std else np.var)(v, axis=axis, ddof=ddof,
                                                                     keepdims=keepdims),
    _moment_vjp, _moment_jvp)


def _moment(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction, std):
    no_out(name, out)
    check_novalue(name, where=where, mean=mean)
    float_dtype(name, dtype)
    if correction is not NoValue:
        ddof = correction
    x = operand_or_raise(a)
    params = {"axis": axes_of(axis, ndim(x)), "ddof": ddof, "keepdims": bool(keepdims), "std": std}
    return cast(apply(MOMENT, (x,), params), dtype)


@register(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=NoValue,
        mean=NoValue, correction=NoValue):
    return _moment("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


@register(np.std, note="0 where the spread is 0 (as a norm at the zero vector)")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=NoValue,
        mean=NoValue, correction=NoValue):
    return _moment("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


def _cumsum_impl(v, axis):
    return np.cumsum(v, axis=axis)


def _cumsum_vjp(out, vals, on, axis):
    def rule(ct):
        return (np.flip(np.cumsum(np.flip(ct, axis), axis), axis),)

    return rule


CUMSUM = Primitive("cumsum", _cumsum_impl, _cumsum_vjp, lambda out, vals, tans, axis: np.cumsum(tans[0], axis))


def _cum_axis(x, axis):
    if axis is None:
        return ravel(x), 0
    return x, normalize_axis_index(axis, ndim(x))


def _cumulative(name, prim, a, axis, dtype, out, kw):
    """cumsum/cumprod (and numpy 2's cumulative_*): checks, 0-d as 1-d, ``axis=None`` flat."""
    no_out(name, out)
    float_dtype(name, dtype)
    if kw.get("include_initial"):
        unsupported(name.replace("cum", "cumulative_"), "include_initial=True")
    x = operand_or_raise(a)
    if ndim(x) == 0:
        x = reshape(x, (1,))
    x, ax = _cum_axis(x, axis)
    return cast(apply(prim, (x,), {"axis": ax}), dtype)


@register(np.cumsum, np_fn("cumulative_sum"))
def cumsum(a, axis=None, dtype=None, out=None, **kw):
    return _cumulative("cumsum", CUMSUM, a, axis, dtype, out, kw)


def _cumprod_others(x, axis):
    """``P[..., j, i] = prod_{k <= i, k != j} x_k`` for ``i >= j`` (0 otherwise), along ``axis``
    moved last: the exact Jacobian of cumprod, also where ``x`` has zeros."""
    xm = np.moveaxis(x, axis, -1)
    n = shape_of(xm)[-1]
    eye = np.eye(n, dtype=bool)
    xx = np.where(eye, 1.0, np.expand_dims(xm, -2))  # row j: x with x_j replaced by 1
    return np.where(np.triu(np.ones((n, n), dtype=bool)), np.cumprod(xx, axis=-1), 0.0)


def _cumprod_vjp(out, vals, on, axis):
    x = vals[0]
    if np.any(np.asarray(strip(x)) == 0):
        def rule(ct):
            p = _cumprod_others(x, axis)
            g = np.sum(p * np.expand_dims(np.moveaxis(ct, axis, -1), -2), axis=-1)
            return (np.moveaxis(g, -1, axis),)

        return rule

    def rule(ct):
        return (np.flip(np.cumsum(np.flip(ct * out, axis), axis), axis) / x,)

    return rule


def _cumprod_jvp(out, vals, tans, axis):
    x = vals[0]
    t = tans[0]
    if np.any(np.asarray(strip(x)) == 0):
        p = _cumprod_others(x, axis)
        g = np.sum(p * np.expand_dims(np.moveaxis(t, axis, -1), -1), axis=-2)
        return np.moveaxis(g, -1, axis)
    return out * np.cumsum(t / x, axis)


CUMPROD = Primitive("cumprod", lambda v, axis: np.cumprod(v, axis=axis), _cumprod_vjp, _cumprod_jvp)


@register(np.cumprod, np_fn("cumulative_prod"), note="exact where a factor is 0")
def cumprod(a, axis=None, dtype=None, out=None, **kw):
    return _cumulative("cumprod", CUMPROD, a, axis, dtype, out, kw)


def _prod_others(x, axes):
    """``prod_{k != j} x_k`` over the reduced ``axes`` for every position j (exact at zeros)."""
    s = shape_of(x)
    nd = len(s)
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    xm = transpose(x, perm)
    bshape = tuple(s[i] for i in keep)
    n = int(np.prod([s[i] for i in axes], dtype=np.int64))
    xf = reshape(xm, bshape + (n,))
    ones = np.ones(bshape + (1,))
    left = np.cumprod(np.concatenate([ones, xf[..., :-1]], axis=-1), axis=-1)
    right = np.flip(np.cumprod(np.flip(np.concatenate([xf[..., 1:], ones], axis=-1), -1), axis=-1), -1)
    o = reshape(left * right, tuple(s[i] for i in perm))
    return transpose(o, list(np.argsort(perm)))


def _prod_vjp(out, vals, on, axis, keepdims):
    x = vals[0]
    s = shape_of(x)
    ks = expand_shape(s, axis)

    def rule(ct):
        if np.size(strip(x)) == 0:
            return (np.zeros(s, dtype=dtype_of(x)),)
        g = ct if keepdims else reshape(ct, ks)
        return (g * _prod_others(x, axis),)

    return rule


def _prod_jvp(out, vals, tans, axis, keepdims):
    x = vals[0]
    if np.size(strip(x)) == 0:
        return np.zeros(shape_of(out), dtype=dtype_of(x))
    return np.sum(tans[0] * _prod_others(x, axis), axis=axis, keepdims=keepdims)


PROD = Primitive("prod", lambda v, axis, keepdims: np.prod(v, axis=axis, keepdims=keepdims), _prod_vjp, _prod_jvp)


@register(np.prod, note="exact where a factor is 0 (no division by it)")
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
    no_out("prod", out)
    check_novalue("prod", initial=initial, where=where)
    float_dtype("prod", dtype)
    x = operand_or_raise(a)
    return cast(apply(PROD, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims)}), dtype)


def logsumexp(a, axis=None, keepdims=False):
    """``log(sum(exp(a), axis))`` computed stably (the max is subtracted as a constant)."""
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = axes_of(axis, len(s))
    xv = np.asarray(strip(x))
    m = np.max(xv, axis=axes, keepdims=True) if xv.size else np.zeros(expand_shape(s, axes))
    m = np.where(np.isfinite(m), m, 0.0)
    r = np.log(apply(SUM, (np.exp(x - m),), {"axis": axes, "keepdims": True})) + m
    if not keepdims:
        r = reshape(r, tuple(n for i, n in enumerate(s) if i not in axes))
    return r


# ============================================================================================


@register(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    no_out("trace", out)
    float_dtype("trace", dtype)
    return cast(sum_(diagonal(a, offset, axis1, axis2), axis=-1), dtype)


if hasattr(np.linalg, "trace"):
    register(np.linalg.trace)(lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype))


# ============================================================================================
# ufunc methods


registry.METHODS[(np.add, "reduce")] = lambda a, axis=0, keepdims=False, initial=NoValue, where=True: _np_sum(a, axis, keepdims=keepdims, initial=initial, where=NoValue if where is True else where)
registry.METHODS[(np.multiply, "reduce")] = lambda a, axis=0, keepdims=False, initial=NoValue, where=True: prod(a, axis, keepdims=keepdims, initial=initial, where=NoValue if where is True else where)
registry.METHODS[(np.maximum, "reduce")] = lambda a, axis=0, keepdims=False, initial=NoValue, where=True: amax(a, axis, keepdims=keepdims, initial=initial, where=NoValue if where is True else where)
registry.METHODS[(np.minimum, "reduce")] = lambda a, axis=0, keepdims=False, initial=NoValue, where=True: amin(a, axis, keepdims=keepdims, initial=initial, where=NoValue if where is True else where)
registry.METHODS[(np.logaddexp, "reduce")] = numpy_valued(np.logaddexp.reduce, lambda a, axis=0, keepdims=False: logsumexp(a, axis, keepdims))
registry.METHODS[(np.add, "accumulate")] = lambda a, axis=0: cumsum(a, axis)
registry.METHODS[(np.multiply, "accumulate")] = lambda a, axis=0: cumprod(a, axis)
