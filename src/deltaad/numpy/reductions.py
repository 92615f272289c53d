"""Reductions: sums, means, extrema, variances, products, cumulative sums and products, and the
ufunc methods ``reduce`` and ``accumulate`` that are the same operations.

The nan-ignoring reductions (``nansum``, ``nanmean``, ``nanmax``...), ``median``, ``quantile`` and
``percentile`` are primitives whose values are numpy's own; ``average`` repeats numpy's
sequence of operations.

Choices at non-differentiable points: ``max``/``min`` split the cotangent evenly among tied
extrema; ``std`` has gradient 0 where the spread is 0 (as a norm at the zero vector); ``prod``
and ``cumprod`` are exact where a factor is zero (no division by it); the nan-ignoring
reductions give a nan entry gradient 0 (a slice of nans only: 0 everywhere); a quantile is the
interpolation of the order statistics it falls between, taken in the stable sorting order at
ties (as ``sort``), and its weights are constants. ``sum``, ``mean``, ``prod``, ``max`` and
``min`` take numpy's ``where=`` (an entry left out gets derivative 0) and ``initial=`` (a
constant; a ``max`` or ``min`` that is ``initial`` alone has derivative 0).
"""

from deltaad._plainnumpy import np

from ..trace import dtype_of, is_dual
from ..trace import value as strip
from . import registry
from .args import (
    NoValue, axes_of, cast, check_novalue, expand_shape, float_dtype, ndim, no_out, np_fn,
    normalize_axis_index, normalize_axis_tuple, unsupported,
)
from .. import trace as _trace
from .array import (
    ArrayDual, Primitive, _apply_reverse1, _reverse_result, add_reduce, apply, as_ndarray,
    broadcast, broadcast_to, operand_or_raise, reshape, shape_of,
)
from .define import numpy_valued, register
from .elementwise import astype
from .shape import diagonal, ravel, transpose


def _sum_impl(v, axis, keepdims):
    if type(v) is np.ndarray:  # what np.sum calls for an ndarray, without its wrapper
        return add_reduce(v, axis, keepdims)
    return np.sum(v, axis=axis, keepdims=keepdims)


def _sum_vjp(out, vals, on, axis, keepdims):
    s = shape_of(vals[0])

    def rule(ct):
        return (_spread(ct, s, axis, keepdims),)

    return rule


def _sum_jvp(out, vals, tans, axis, keepdims):
    return np.sum(tans[0], axis=axis, keepdims=keepdims)


SUM = Primitive("sum", _sum_impl, _sum_vjp, _sum_jvp)


def sum_(x, axis=None, keepdims=False):
    x = operand_or_raise(x)
    return apply(SUM, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims)})


_ADD_REDUCE = np.add.reduce
_AXES = {}  # (axis, ndim) -> axes_of(axis, ndim), for the short paths


def _reverse_reduction(args, kwargs):
    """``(array dual, its value, axes, keepdims)`` of a reduction call ``f(a, axis,
    keepdims=)`` whose ``a`` is an array dual of the open reverse trace holding a plain ndarray,
    its other arguments at most ``axis`` (None, an int or a tuple of ints) and a bool
    ``keepdims``; None for any other call (the rule's general path then)."""
    n = len(args)
    if n == 0 or n > 2:
        return None
    a = args[0]
    if type(a) is not ArrayDual:
        return None
    v = a.value
    top = a.trace
    if type(v) is not np.ndarray or top.is_forward or top.closed or _trace.lifting:
        return None
    axis = args[1] if n == 2 else None
    keepdims = False
    for k in kwargs:
        if k == "axis" and n == 1:
            axis = kwargs[k]
        elif k == "keepdims":
            keepdims = kwargs[k]
            if keepdims is not True and keepdims is not False:
                return None
        else:
            return None
    ta = type(axis)
    if ta is tuple:
        for i in axis:
            if type(i) is not int:
                return None
    elif ta is not int and axis is not None:
        return None
    key = (axis, v.ndim)  # (ints and None only: 1.0 or True would find 1's entry)
    axes = _AXES.get(key)
    if axes is None:
        axes = axes_of(axis, v.ndim)
        if len(_AXES) > 1024:
            _AXES.clear()
        _AXES[key] = axes
    return a, v, axes, keepdims


# --------------------------------------------------------------------------------------------
# where= and initial=: numpy's own value; an entry left out by ``where`` gets cotangent 0, and
# ``initial`` (a constant) none


def _masked(name, initial, where):
    """``(keywords for numpy, where or None)`` of a reduction's ``initial=``/``where=``, or
    None when neither was given; an error for a dual ``initial`` (it is a constant here)."""
    kw = {}
    if initial is not NoValue and initial is not None:
        if is_dual(initial):
            unsupported(name, "initial= a dual (it is a constant here)")
        kw["initial"] = initial
    mask = None
    if where is not NoValue and where is not True:
        if is_dual(where):
            raise TypeError("numpy.%s(..., where=) takes a boolean mask, not a dual" % name)
        mask = as_ndarray(where, dtype=bool)
        kw["where"] = mask
    return (kw, mask) if kw else None


def _mask_of(mask, s):
    return np.ones(s, dtype=bool) if mask is None else broadcast_to(mask, s)


def _reduce_impl(v, axis, keepdims, kw, f):
    return f(v, axis=axis, keepdims=keepdims, **kw)


def _spread(ct, s, axis, keepdims):
    """A reduction's cotangent ``ct`` spread back over the reduced input's shape ``s``."""
    if not keepdims:
        ks = expand_shape(s, axis)
        ct = ct.reshape(ks) if type(ct) is np.ndarray else reshape(ct, ks)
    return broadcast_to(ct, s)


def _msum_vjp(out, vals, on, axis, keepdims, kw, f):
    s = shape_of(vals[0])
    m = _mask_of(kw.get("where"), s)

    def rule(ct):
        return (np.where(m, _spread(ct, s, axis, keepdims), 0.0),)

    return rule


def _msum_jvp(out, vals, tans, axis, keepdims, kw, f):
    m = _mask_of(kw.get("where"), shape_of(vals[0]))
    return np.sum(np.where(m, tans[0], 0.0), axis=axis, keepdims=keepdims)


SUM_MASKED = Primitive("sum (where=, initial=)", _reduce_impl, _msum_vjp, _msum_jvp)


def _mmean_weights(vals, axis, kw):
    m = _mask_of(kw.get("where"), shape_of(vals[0]))
    n = np.sum(m, axis=axis, keepdims=True)
    return m, np.where(n > 0, n, 1)


def _mmean_vjp(out, vals, on, axis, keepdims, kw, f):
    s = shape_of(vals[0])
    m, n = _mmean_weights(vals, axis, kw)

    def rule(ct):
        return (np.where(m, _spread(ct, s, axis, keepdims) / n, 0.0),)

    return rule


def _mmean_jvp(out, vals, tans, axis, keepdims, kw, f):
    m, n = _mmean_weights(vals, axis, kw)
    return np.sum(np.where(m, tans[0] / n, 0.0), axis=axis, keepdims=keepdims)


MEAN_MASKED = Primitive("mean (where=)", _reduce_impl, _mmean_vjp, _mmean_jvp)


@register(np.sum)
def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
    no_out("sum", out)
    float_dtype("sum", dtype)
    masked = _masked("sum", initial, where)
    if masked is not None:
        x = operand_or_raise(a)
        r = apply(SUM_MASKED, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims),
                                     "kw": masked[0], "f": np.sum})
    else:
        r = sum_(a, axis, keepdims)
    return r if dtype is None else astype(r, dtype)


def _sum_short(args, kwargs):
    p = _reverse_reduction(args, kwargs)
    if p is None:
        return None
    a, v, axes, keepdims = p
    return _sum_reverse(a, v, axes, keepdims)


def _sum_reverse(a, v, axes, keepdims):
    """What ``apply(SUM)`` records for ``a`` (value ``v``) of the open reverse trace: its steps
    (:func:`array._apply_reverse1`) with SUM's own impl and vjp called directly."""
    out = _sum_impl(v, axes, keepdims)
    if type(out) is not np.ndarray:  # (a numpy scalar: the 0-d array apply makes of it)
        out = as_ndarray(out)
    return _reverse_result(out, a.trace, [a.id], _sum_vjp(out, (v,), _ON1, axes, keepdims))


_ON1 = (True,)


registry.SHORT_PATHS[np.sum] = (_np_sum, _sum_short)


@register(np.mean, note="with where=: an entry left out gets derivative 0")
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=NoValue):
    no_out("mean", out)
    float_dtype("mean", dtype)
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = axes_of(axis, len(s))
    masked = _masked("mean", NoValue, where)
    if masked is not None:
        r = apply(MEAN_MASKED, (x,), {"axis": axes, "keepdims": bool(keepdims),
                                      "kw": masked[0], "f": np.mean})
        return r if dtype is None else astype(r, dtype)
    r = apply(SUM, (x,), {"axis": axes, "keepdims": bool(keepdims)})
    r = _mean_of(r, s, axes)
    return r if dtype is None else astype(r, dtype)


def _mean_of(r, s, axes):
    """The mean from ``r``, the sum over ``axes`` of an array of shape ``s``."""
    n = 1
    for i in axes:
        n *= s[i]
    return r / float(n) if n else r * np.nan  # (a float: the fast paths take it, same bits)


def _mean_short(args, kwargs):
    p = _reverse_reduction(args, kwargs)
    if p is None:
        return None
    a, v, axes, keepdims = p
    return _mean_of(_sum_reverse(a, v, axes, keepdims), v.shape, axes)


registry.SHORT_PATHS[np.mean] = (mean, _mean_short)


def _choose_impl(v, axis, keepdims, f, kw):
    if type(v) is np.ndarray and not kw:  # what np.max / np.min call, without their wrapper
        return _EXTREMUM_REDUCE[f](v, axis, None, None, keepdims)
    return f(v, axis=axis, keepdims=keepdims, **kw)


_EXTREMUM_REDUCE = {np.max: np.maximum.reduce, np.min: np.minimum.reduce}
# The compiled fast path's weights where every slice has one extremum
# (``deltaad._arrays.extremum_weights``), installed by ``fast``; None on the pure backend.
EXTREMUM_WEIGHTS = None
_MIN_REDUCE = np.minimum.reduce
_COUNT = np.count_nonzero


def _choose_weights(x, out, axis, keepdims, kw):
    """The cotangent's even split among the tied extrema (of the entries ``where`` admits):
    0 everywhere in a slice whose extremum is ``initial`` alone."""
    xv = as_ndarray(strip(x))
    ov = as_ndarray(strip(out))
    if EXTREMUM_WEIGHTS is not None and not kw:  # one extremum per slice, in one C pass
        w = EXTREMUM_WEIGHTS(xv, ov, axis)
        if w is not None:
            return w
    if not keepdims:
        ov = ov.reshape(expand_shape(xv.shape, axis))
    mask = xv == ov
    where = kw.get("where")
    if where is None and "initial" not in kw:
        if _COUNT(mask) == ov.size:
            s = ov.sum()
            if s == s:
                # no extremum is a nan, so each slice holds at least one match, and as many
                # matches as slices: exactly one each, the commonest case. Its weights are
                # mask / n with n = 1: the mask as floats (without the count per slice, a
                # reduction over a cast that costs numpy more than the rest together)
                return mask.astype(xv.dtype if xv.dtype.kind == "f" else float)
        # Every slice holds its extremum, so counts n >= 1 -- but where that is a nan, which
        # equals nothing: there its nans tie. (Then n >= 1 everywhere: the division below is
        # the general case's, without its guard.)
        n = _ADD_REDUCE(mask, axis, None, None, True)  # (np.sum's reduction)
        if n.size and not _MIN_REDUCE(n, None):
            mask |= np.isnan(xv) & np.isnan(ov)
            n = _ADD_REDUCE(mask, axis, None, None, True)
    else:
        nan = np.isnan(ov)
        if nan.any():
            mask |= np.isnan(xv) & nan
        if where is not None:
            mask = mask & _mask_of(where, xv.shape)
        n = _ADD_REDUCE(mask, axis, None, None, True)
        n = np.where(n > 0, n, 1)
    return (mask / n).astype(xv.dtype if xv.dtype.kind == "f" else float, copy=False)


def _choose_vjp(out, vals, on, axis, keepdims, f, kw):
    x = vals[0]
    w = _choose_weights(x, out, axis, keepdims, kw)
    ks = expand_shape(shape_of(x), axis)

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        return (g * w,)

    return rule


def _choose_jvp(out, vals, tans, axis, keepdims, f, kw):
    w = _choose_weights(vals[0], out, axis, keepdims, kw)
    return np.sum(tans[0] * w, axis=axis, keepdims=keepdims)


CHOOSE = Primitive("max/min", _choose_impl, _choose_vjp, _choose_jvp)


def _chooser(name, f):
    def reduce(a, axis=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
        no_out(name, out)
        x = operand_or_raise(a)
        masked = _masked(name, initial, where)
        return apply(CHOOSE, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims),
                                    "f": f, "kw": {} if masked is None else masked[0]})

    def short(args, kwargs):
        p = _reverse_reduction(args, kwargs)
        if p is None:
            return None
        a, v, axes, keepdims = p
        return _apply_reverse1(CHOOSE, v, a.trace, a.id,
                               {"axis": axes, "keepdims": keepdims, "f": f, "kw": {}})

    reduce.__name__ = name
    reduce.short = short
    return reduce


_TIES = "the cotangent is split evenly among tied extrema"
amax = register(np.max, np.amax, note=_TIES)(_chooser("max", np.max))
amin = register(np.min, np.amin, note=_TIES)(_chooser("min", np.min))
for _f, _rule in ((np.max, amax), (np.amax, amax), (np.min, amin), (np.amin, amin)):
    registry.SHORT_PATHS[_f] = (_rule, _rule.short)
del _f, _rule


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
    zero = as_ndarray(strip(o)) == 0
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
    if np.any(as_ndarray(strip(x)) == 0):
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
    if np.any(as_ndarray(strip(x)) == 0):
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


def _mprod_others(x, axis, kw):
    """d prod / d x of a product with ``where=`` (entries left out count as 1 and get 0) and
    ``initial=`` (a constant factor)."""
    m = _mask_of(kw.get("where"), shape_of(x))
    d = np.where(m, _prod_others(np.where(m, x, 1.0), axis), 0.0)
    return d * kw["initial"] if "initial" in kw else d


def _mprod_vjp(out, vals, on, axis, keepdims, kw, f):
    x = vals[0]
    s = shape_of(x)

    def rule(ct):
        if np.size(strip(x)) == 0:
            return (np.zeros(s, dtype=dtype_of(x)),)
        return (_spread(ct, s, axis, keepdims) * _mprod_others(x, axis, kw),)

    return rule


def _mprod_jvp(out, vals, tans, axis, keepdims, kw, f):
    x = vals[0]
    if np.size(strip(x)) == 0:
        return np.zeros(shape_of(out), dtype=dtype_of(x))
    return np.sum(tans[0] * _mprod_others(x, axis, kw), axis=axis, keepdims=keepdims)


PROD_MASKED = Primitive("prod (where=, initial=)", _reduce_impl, _mprod_vjp, _mprod_jvp)


@register(np.prod, note="exact where a factor is 0 (no division by it)")
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue, where=NoValue):
    no_out("prod", out)
    float_dtype("prod", dtype)
    x = operand_or_raise(a)
    masked = _masked("prod", initial, where)
    if masked is not None:
        return cast(apply(PROD_MASKED, (x,), {"axis": axes_of(axis, ndim(x)),
                                              "keepdims": bool(keepdims), "kw": masked[0],
                                              "f": np.prod}), dtype)
    return cast(apply(PROD, (x,), {"axis": axes_of(axis, ndim(x)), "keepdims": bool(keepdims)}), dtype)


def logsumexp(a, axis=None, keepdims=False):
    """``log(sum(exp(a), axis))`` computed stably (the max is subtracted as a constant)."""
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = axes_of(axis, len(s))
    xv = as_ndarray(strip(x))
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


# ============================================================================================
# Reductions that ignore nans: numpy's values; a nan entry has gradient 0


def _nan_mask(x):
    return ~np.isnan(as_ndarray(strip(x)))


def _reduce_weights_vjp(weights):
    """A reduction's vjp and jvp from its weights ``w(x, out, axis, keepdims, **kw)``: the
    derivative of the result with respect to each entry, shaped like ``x``."""

    def vjp(out, vals, on, axis, keepdims, **kw):
        w = weights(vals[0], out, axis, keepdims, **kw)
        ks = expand_shape(shape_of(vals[0]), axis)

        def rule(ct):
            return ((ct if keepdims else reshape(ct, ks)) * w,)

        return rule

    def jvp(out, vals, tans, axis, keepdims, **kw):
        w = weights(vals[0], out, axis, keepdims, **kw)
        return np.sum(tans[0] * w, axis=axis, keepdims=keepdims)

    return vjp, jvp


def _nansum_weights(x, out, axis, keepdims):
    return _nan_mask(x).astype(dtype_of(x) if dtype_of(x).kind == "f" else float)


def _nanmean_weights(x, out, axis, keepdims):
    m = _nan_mask(x)
    n = np.sum(m, axis=axis, keepdims=True)
    return np.where(m, 1.0 / np.maximum(n, 1), 0.0).astype(_fdt(x))


def _fdt(x):
    dt = dtype_of(x)
    return dt if dt.kind == "f" else np.dtype(float)


def _nanchoose_weights(x, out, axis, keepdims, f):
    xv = as_ndarray(strip(x))
    ov = as_ndarray(strip(out))
    if not keepdims:
        ov = ov.reshape(expand_shape(xv.shape, axis))
    mask = xv == ov  # nan entries are never chosen; a slice of nans: no weight anywhere
    return (mask / np.maximum(np.sum(mask, axis=axis, keepdims=True), 1)).astype(_fdt(x))


def _nanprod_weights(x, out, axis, keepdims):
    m = _nan_mask(x)
    return np.where(m, _prod_others(np.where(m, x, 1.0), axis), 0.0)


def _nanmoment_weights(x, out, axis, keepdims, ddof, std):
    """As for var/std, over the non-nan entries of each slice (n of them)."""
    m = _nan_mask(x)
    n = np.sum(m, axis=axis, keepdims=True)
    xz = np.where(m, x, 0.0)
    c = np.where(m, xz - np.sum(xz, axis=axis, keepdims=True) / np.maximum(n, 1), 0.0)
    k = n - ddof
    kp = np.where(k > 0, k, 1)
    if not std:
        return np.where(k > 0, c * (2.0 / kp), np.nan)
    o = out if keepdims else reshape(out, expand_shape(shape_of(x), axis))
    zero = as_ndarray(strip(o)) == 0
    return np.where(k > 0, np.where(zero, 0.0, c / (kp * np.where(zero, 1.0, o))), np.nan)


def _nan_primitive(name, f, weights):
    vjp, jvp = _reduce_weights_vjp(weights)

    def impl(v, axis, keepdims, **kw):
        kw.pop("f", None)
        return f(v, axis=axis, keepdims=keepdims, **kw)

    return Primitive(name, impl, vjp, jvp)


NANSUM = _nan_primitive("nansum", np.nansum, _nansum_weights)
NANMEAN = _nan_primitive("nanmean", np.nanmean, _nanmean_weights)
NANCHOOSE = Primitive("nanmax/nanmin", lambda v, axis, keepdims, f: f(v, axis=axis, keepdims=keepdims),
                      *_reduce_weights_vjp(_nanchoose_weights))
NANPROD = _nan_primitive("nanprod", np.nanprod, _nanprod_weights)
NANMOMENT = Primitive(
    "nanvar/nanstd",
    lambda v, axis, keepdims, ddof, std: (np.nanstd if std else np.nanvar)(
        v, axis=axis, ddof=ddof, keepdims=keepdims),
    *_reduce_weights_vjp(_nanmoment_weights))

_NAN = "a nan entry has gradient 0"


def _nan_reduce(name, prim, a, axis, dtype, out, keepdims, **params):
    no_out(name, out)
    float_dtype(name, dtype)
    x = operand_or_raise(a)
    params.update(axis=axes_of(axis, ndim(x)), keepdims=bool(keepdims))
    return cast(apply(prim, (x,), params), dtype)


@register(np.nansum, note=_NAN)
def nansum(a, axis=None, dtype=None, out=None, keepdims=NoValue, initial=NoValue, where=NoValue):
    check_novalue("nansum", initial=initial, where=where)
    return _nan_reduce("nansum", NANSUM, a, axis, dtype, out, keepdims is True)


@register(np.nanmean, note=_NAN)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=NoValue, *, where=NoValue):
    check_novalue("nanmean", where=where)
    return _nan_reduce("nanmean", NANMEAN, a, axis, dtype, out, keepdims is True)


@register(np.nanprod, note=_NAN + "; exact where a factor is 0")
def nanprod(a, axis=None, dtype=None, out=None, keepdims=NoValue, initial=NoValue, where=NoValue):
    check_novalue("nanprod", initial=initial, where=where)
    return _nan_reduce("nanprod", NANPROD, a, axis, dtype, out, keepdims is True)


def _nanchooser(name, f):
    def reduce(a, axis=None, out=None, keepdims=NoValue, initial=NoValue, where=NoValue):
        check_novalue(name, initial=initial, where=where)
        return _nan_reduce(name, NANCHOOSE, a, axis, None, out, keepdims is True, f=f)

    reduce.__name__ = name
    return reduce


register(np.nanmax, note=_NAN + "; " + _TIES)(_nanchooser("nanmax", np.nanmax))
register(np.nanmin, note=_NAN + "; " + _TIES)(_nanchooser("nanmin", np.nanmin))


def _nanmoment(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction, std):
    check_novalue(name, where=where, mean=mean)
    if correction is not NoValue:
        ddof = correction
    return _nan_reduce(name, NANMOMENT, a, axis, dtype, out, keepdims is True, ddof=ddof, std=std)


@register(np.nanvar, note=_NAN)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NoValue, *, where=NoValue,
           mean=NoValue, correction=NoValue):
    return _nanmoment("nanvar", a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


@register(np.nanstd, note=_NAN + "; 0 where the spread is 0")
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NoValue, *, where=NoValue,
           mean=NoValue, correction=NoValue):
    return _nanmoment("nanstd", a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


# ============================================================================================
# average: numpy's own sequence of operations (the weights may be duals too)


@register(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=NoValue):
    x = operand_or_raise(a)
    nd = ndim(x)
    axes = None if axis is None else normalize_axis_tuple(axis, nd)
    kd = keepdims is True
    if weights is None:
        avg = mean(x, axes, keepdims=kd)
        scl = as_ndarray(float(np.size(strip(x))) / max(np.size(strip(avg)), 1))
    else:
        w = operand_or_raise(weights)
        s = shape_of(x)
        if shape_of(w) != s:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if shape_of(w) != tuple(s[i] for i in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            w = reshape(transpose(w, [int(i) for i in np.argsort(axes)]),
                        tuple(n if i in axes else 1 for i, n in enumerate(s)))
        scl = sum_(w, axes, kd)
        if np.any(as_ndarray(strip(scl)) == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = sum_(x * w, axes, kd) / scl
    if returned:
        if shape_of(scl) != shape_of(avg):
            scl = broadcast(scl, shape_of(avg)) * 1.0
        return avg, scl
    return avg


# ============================================================================================
# median, quantile, percentile (and their nan versions): numpy's values; the derivative is
# the interpolation's weights on the order statistics (constants)

_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _order_weights(xv, q, axes, method, ignore_nan):
    """Weights ``W`` of shape ``q.shape + x.shape``: the quantile ``q_i`` of each slice along
    ``axes`` is ``sum W[i] * x`` over the slice (nans ignored when ``ignore_nan``)."""
    nd = xv.ndim
    keep = [i for i in range(nd) if i not in axes]
    perm = keep + list(axes)
    xm = np.transpose(xv, perm)
    bshape = xm.shape[: len(keep)]
    flat = xm.reshape(bshape + (-1,))
    order = np.argsort(flat, axis=-1, kind="stable")  # nans last
    n = flat.shape[-1]
    count = np.sum(~np.isnan(flat), axis=-1) if ignore_nan else np.full(bshape, n)
    qf = as_ndarray(q, dtype=float).reshape(-1)
    w = np.zeros((qf.size,) + flat.shape)
    for i, qi in enumerate(qf):
        pos = qi * (count - 1.0)
        lo = np.floor(pos)
        g = pos - lo
        if method == "lower":
            g = np.zeros_like(g)
        elif method == "higher":
            g = (g > 0).astype(float)
        elif method == "nearest":  # numpy rounds half to even
            g = (np.around(pos) > lo).astype(float)
        elif method == "midpoint":
            g = np.where(g > 0, 0.5, 0.0)
        lo = np.clip(lo, 0, np.maximum(count - 1, 0)).astype(np.intp)
        hi = np.clip(lo + 1, 0, np.maximum(count - 1, 0)).astype(np.intp)
        ranks = np.arange(n)
        wl = (ranks == lo[..., None]) * (1.0 - g)[..., None]
        wh = (ranks == hi[..., None]) * g[..., None]
        ws = np.where((count > 0)[..., None], wl + wh, 0.0)
        back = np.empty_like(ws)
        np.put_along_axis(back, order, ws, axis=-1)
        w[i] = back
    w = w.reshape((qf.size,) + xm.shape)
    w = np.transpose(w, [0] + [1 + int(j) for j in np.argsort(perm)])
    return w.reshape(np.shape(q) + xv.shape)


def _quantile_impl(v, f, q, axes, keepdims, method, ignore_nan):
    kw = {} if q is None else {"method": method}
    args = (v,) if q is None else (v, q)
    return f(*args, axis=axes, keepdims=keepdims, **kw)


_ORDER = ("the interpolation between the order statistics it falls between (stable order at "
          "ties); q is a constant")


def _quantile(name, f, a, q, axis, out, overwrite_input, method, keepdims, weights, scale,
              ignore_nan, interpolation=None):
    no_out(name, out)
    if weights is not None:
        unsupported(name, "weights=")
    if interpolation is not None:
        method = interpolation
    if method not in _METHODS:
        unsupported(name, "method=%r" % (method,))
    if q is not None and (is_dual(q) or isinstance(q, (list, tuple)) and any(is_dual(e) for e in q)):
        raise TypeError("numpy.%s: the quantile q is a dual number; deltaad differentiates "
                        "quantiles in the data only (pass deltaad.value(q))" % name)
    x = operand_or_raise(a)
    nd = ndim(x)
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    # the derivative needs the reduced axes; numpy's own call gets the axis the user gave
    params = {"f": f, "q": None if q is None else as_ndarray(q), "axes": axes,
              "keepdims": bool(keepdims), "method": method, "ignore_nan": ignore_nan,
              "scale": scale, "call_axes": axis}
    return apply(QUANTILE, (x,), params)


def _qcall_impl(v, f, q, axes, keepdims, method, ignore_nan, scale, call_axes):
    return _quantile_impl(v, f, q, call_axes, keepdims, method, ignore_nan)


def _qcall_vjp(out, vals, on, f, q, axes, keepdims, method, ignore_nan, scale, call_axes):
    x = vals[0]
    qq = 0.5 if q is None else as_ndarray(q, dtype=float) / scale
    w = _order_weights(as_ndarray(strip(x)), qq, axes, method, ignore_nan).astype(_fdt(x))
    nq = np.ndim(qq)
    xs = shape_of(x)
    ks = tuple(np.shape(qq)) + expand_shape(xs, axes)

    def rule(ct):
        g = reshape(ct, ks)
        g = g * w
        return (np.sum(g, axis=tuple(range(nq))) if nq else g,)

    return rule


def _qcall_jvp(out, vals, tans, f, q, axes, keepdims, method, ignore_nan, scale, call_axes):
    x = vals[0]
    qq = 0.5 if q is None else as_ndarray(q, dtype=float) / scale
    w = _order_weights(as_ndarray(strip(x)), qq, axes, method, ignore_nan).astype(_fdt(x))
    nq = np.ndim(qq)
    r = np.sum(w * tans[0], axis=tuple(nq + i for i in axes), keepdims=True)
    return reshape(r, shape_of(out))


QUANTILE = Primitive("quantile", _qcall_impl, _qcall_vjp, _qcall_jvp)


@register(np.quantile, note=_ORDER)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False,
             *, weights=None, interpolation=None):
    return _quantile("quantile", np.quantile, a, q, axis, out, overwrite_input, method,
                     keepdims, weights, 1.0, False, interpolation)


@register(np.percentile, note=_ORDER)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    return _quantile("percentile", np.percentile, a, q, axis, out, overwrite_input, method,
                     keepdims, weights, 100.0, False, interpolation)


@register(np.nanquantile, note=_ORDER + "; " + _NAN)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=NoValue, *, weights=None, interpolation=None):
    return _quantile("nanquantile", np.nanquantile, a, q, axis, out, overwrite_input, method,
                     keepdims is True, weights, 1.0, True, interpolation)


@register(np.nanpercentile, note=_ORDER + "; " + _NAN)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=NoValue, *, weights=None, interpolation=None):
    return _quantile("nanpercentile", np.nanpercentile, a, q, axis, out, overwrite_input,
                     method, keepdims is True, weights, 100.0, True, interpolation)


@register(np.median, note=_ORDER)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _quantile("median", np.median, a, None, axis, out, overwrite_input, "linear",
                     keepdims, None, 1.0, False)


@register(np.nanmedian, note=_ORDER + "; " + _NAN)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=NoValue):
    return _quantile("nanmedian", np.nanmedian, a, None, axis, out, overwrite_input, "linear",
                     keepdims is True, None, 1.0, True)


# ============================================================================================
# nancumsum, nancumprod, trapezoid: numpy's own arithmetic


@register(np.nancumsum, note=_NAN)
def nancumsum(a, axis=None, dtype=None, out=None):
    x = operand_or_raise(a)
    return cumsum(_replace_nan(x, 0.0), axis, dtype, out)


@register(np.nancumprod, note=_NAN + "; exact where a factor is 0")
def nancumprod(a, axis=None, dtype=None, out=None):
    x = operand_or_raise(a)
    return cumprod(_replace_nan(x, 1.0), axis, dtype, out)


def _replace_nan(x, v):
    from .elementwise import where

    nan = np.isnan(as_ndarray(strip(x)))
    return where(nan, v, x) if nan.any() else x


if hasattr(np, "trapezoid"):
    @register(np.trapezoid)
    def trapezoid(y, x=None, dx=1.0, axis=-1):
        """numpy's formula: ``sum(d * (y[1:] + y[:-1]) / 2)`` (differentiable in y, x, dx)."""
        from .shape import diff

        y = operand_or_raise(y)
        nd = ndim(y)
        ax = normalize_axis_index(axis, nd)
        if x is None:
            d = dx
        else:
            x = operand_or_raise(x)
            if ndim(x) == 1:
                d = diff(x)
                shape = [1] * nd
                shape[ax] = shape_of(d)[0]
                d = reshape(d, tuple(shape))
            else:
                d = diff(x, axis=ax)
        pre = (slice(None),) * ax
        from .array import getitem

        hi = getitem(y, pre + (slice(1, None),), True)
        lo = getitem(y, pre + (slice(None, -1),), True)
        return sum_(d * (hi + lo) / 2.0, ax)
