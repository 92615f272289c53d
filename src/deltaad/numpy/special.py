"""scipy.special's Python functions: ``logsumexp``, ``softmax``, ``log_softmax``,
``multigammaln``.

They are not ufuncs: they convert their input with ``np.asarray`` and never reach numpy's
dispatch. Their rules are late rules (:mod:`.registry`): when the user imports
``scipy.special`` (deltaad never imports it), each is replaced in the module by a version that
calls the rule when an argument holds a dual and scipy's function otherwise. Each rule is a
primitive whose value is scipy's own function applied to the plain values (the same bits as
the call without deltaad); its derivative is written with numpy functions, so it
differentiates again.

Choices: where ``logsumexp`` is infinite (every term ``-inf``, or one ``+inf``) its gradient is
0; the sign returned with ``return_sign=True`` is a constant.
"""

import sys

from deltaad._plainnumpy import np

from ..trace import value as strip
from . import registry
from .args import as_array, axes_of, expand_shape, ndim, unsupported
from .array import Primitive, apply, reshape, shape_of, unbroadcast
from .scipy_late import late

# --------------------------------------------------------------------------------------------
# logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False)


def _lse_impl(a, b=None, *, axes, keepdims, sign, original):
    signed = sign is not None
    r = original(a, axis=axes, b=b, keepdims=keepdims, return_sign=signed)
    return r[0] if signed else r


def _lse_weights(vals, out, axes, keepdims, sign, with_b):
    """``exp(a - out)`` (d out / d b), and ``b`` times it (d out / d a), with the sign of the
    sum when it is returned; 0 where ``out`` is infinite."""
    a = vals[0]
    o = out if keepdims else reshape(out, expand_shape(broadcast_shape(vals), axes))
    ov = np.asarray(strip(o))
    finite = np.isfinite(ov)
    e = np.exp(a - np.where(finite, o, 0.0))
    if sign is not None:
        e = e * sign
    e = np.where(finite, e, 0.0)
    return (e * vals[1] if with_b else e), e


def broadcast_shape(vals):
    return np.broadcast_shapes(*[shape_of(v) for v in vals])


def _lse_vjp(out, vals, on, axes, keepdims, sign, original):
    with_b = len(vals) > 1
    wa, wb = _lse_weights(vals, out, axes, keepdims, sign, with_b)
    ks = expand_shape(broadcast_shape(vals), axes)
    shapes = [shape_of(v) for v in vals]

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        cts = [unbroadcast(g * wa, shapes[0]) if on[0] else None]
        if with_b:
            cts.append(unbroadcast(g * wb, shapes[1]) if on[1] else None)
        return tuple(cts)

    return rule


def _lse_jvp(out, vals, tans, axes, keepdims, sign, original):
    with_b = len(vals) > 1
    wa, wb = _lse_weights(vals, out, axes, keepdims, sign, with_b)
    t = None
    if tans[0] is not None:
        t = tans[0] * wa
    if with_b and tans[1] is not None:
        u = tans[1] * wb
        t = u if t is None else t + u
    return np.sum(t, axis=axes, keepdims=keepdims)


LOGSUMEXP = Primitive("scipy.special.logsumexp", _lse_impl, _lse_vjp, _lse_jvp)


def _logsumexp(original):
    def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
        x = as_array(a)
        ops = [x] if b is None else [x, as_array(b)]
        if ndim(x) == 0 and (b is None or ndim(ops[1]) == 0):
            ops = [reshape(o, (1,)) for o in ops]  # scipy works on at least 1-d
        nd = len(broadcast_shape(ops))
        axes = axes_of(axis, nd)
        sign = None
        if return_sign:
            sign = original(*[np.asarray(strip(o)) for o in ops[:1]], axis=axes,
                            b=None if b is None else np.asarray(strip(ops[1])), keepdims=True,
                            return_sign=True)[1]
            if np.iscomplexobj(sign):
                unsupported("scipy.special.logsumexp", "complex values")
        params = {"axes": axes, "keepdims": bool(keepdims), "sign": sign, "original": original}
        r = apply(LOGSUMEXP, ops, params)
        if not return_sign:
            return r
        s = sign if keepdims else np.squeeze(sign, axis=axes)
        return r, (s[()] if s.ndim == 0 else s)

    return logsumexp


# --------------------------------------------------------------------------------------------
# softmax(x, axis=None) and log_softmax(x, axis=None)


def _softmax_vjp(out, vals, on, axes, original):
    def rule(ct):
        return (out * (ct - np.sum(ct * out, axis=axes, keepdims=True)),)

    return rule


def _softmax_jvp(out, vals, tans, axes, original):
    t = tans[0]
    return out * (t - np.sum(t * out, axis=axes, keepdims=True))


def _log_softmax_vjp(out, vals, on, axes, original):
    p = np.exp(out)

    def rule(ct):
        return (ct - p * np.sum(ct, axis=axes, keepdims=True),)

    return rule


def _log_softmax_jvp(out, vals, tans, axes, original):
    t = tans[0]
    return t - np.sum(np.exp(out) * t, axis=axes, keepdims=True)


def _axis_impl(v, axes, original):
    return original(v, axis=axes)


SOFTMAX = Primitive("scipy.special.softmax", _axis_impl, _softmax_vjp, _softmax_jvp)
LOG_SOFTMAX = Primitive("scipy.special.log_softmax", _axis_impl, _log_softmax_vjp,
                        _log_softmax_jvp)


def _by_axis(prim):
    def factory(original):
        def f(x, axis=None):
            x = as_array(x)
            return apply(prim, (x,), {"axes": axes_of(axis, ndim(x)), "original": original})

        f.__name__ = prim.name.rpartition(".")[2]
        return f

    return factory


_INF = "0 where the result is infinite; the sign (return_sign=True) is a constant"
registry.register_late("scipy.special.logsumexp", _logsumexp, _INF)
registry.register_late("scipy.special.softmax", _by_axis(SOFTMAX))
registry.register_late("scipy.special.log_softmax", _by_axis(LOG_SOFTMAX))


# --------------------------------------------------------------------------------------------
# multigammaln(a, d): scipy's code calls the gammaln ufunc on a list of object arrays. A
# scipy-valued rule (scipy_late): scipy's value and checks, the derivative of
# d (d - 1) / 4 log(pi) + sum_j gammaln(a - (j - 1) / 2)


def _multigammaln(original):
    def multigammaln(ref, a, d):
        gammaln = sys.modules["scipy.special"].gammaln
        a = as_array(a)
        d = int(np.asarray(d)[()])
        r = (d * (d - 1) * 0.25) * np.log(np.pi)
        for j in range(1, d + 1):
            r = r + gammaln(a - (j - 1.0) / 2)
        return r

    return multigammaln


late("scipy.special.multigammaln", _multigammaln, "every order (a sum of gammaln)")

# scipy.special's piecewise-constant ufuncs: computed on the plain values (derivative 0)
registry.LATE_CONSTANT.update(["scipy.special.gammasgn", "scipy.special.round"])
