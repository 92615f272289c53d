"""Derivative rules for numpy on array duals: ufuncs, reductions, shape functions, linear algebra.

Each differentiable operation is a :class:`deltaad.arrays.Primitive` (value, vjp maker, jvp)
or a composition of primitives (``mean = sum / n``, ``tensordot = transpose + reshape +
matmul``, ``sort = gather by the sorting permutation``), so that compositions get their
derivatives from their parts. Rules are written with numpy functions on values and cotangents:
on an outer dual they dispatch back here, which is what makes higher derivatives work.

Every function here is registered in ``arrays.FUNCTION_RULES`` / ``arrays.UFUNC_RULES`` under
the numpy function it stands for; anything not registered raises ``NotImplementedError``.

Choices at non-differentiable points (the same as the scalar functions where those exist):
``abs`` at 0 has derivative 0; ``maximum``/``minimum``/``fmax``/``fmin`` ties give each side
1/2; ``max``/``min`` reductions split the cotangent evenly among tied maxima; ``clip`` passes
the gradient to ``x`` inside ``[lo, hi]`` (bounds included) and to the bound outside; ``sort``
follows the stable sorting permutation; ``norm`` at 0 has gradient 0; ``floor``, ``sign``,
comparisons, ``argmax`` and friends are constants (derivative zero).
"""

import math
import string

import numpy as np

from . import arrays as A
from .arrays import (
    FUNCTION_RULES, PLAIN_UFUNCS, REDUCE_RULES, UFUNC_RULES, ArrayDual, Dual, Primitive, apply,
    broadcast, dtype_of, getitem, operand_or_raise, reshape, shape_of, strip, unbroadcast,
)

try:
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # numpy < 2
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

try:
    from numpy._globals import _NoValue
except ImportError:  # pragma: no cover
    _NoValue = object()

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _register(*funcs):
    def deco(impl):
        for f in funcs:
            if f is not None:
                FUNCTION_RULES[f] = impl
        return impl

    return deco


def _np(name, module=np):
    return getattr(module, name, None)


def _ndim(x):
    return len(shape_of(x))


def _is_dual(x):
    t = type(x)
    return t is ArrayDual or t is Dual


def _arr(x):
    """An operand as an array (dual): scalars become 0-d arrays, lists are packed."""
    x = operand_or_raise(x)
    t = type(x)
    if t is ArrayDual or t is np.ndarray:
        return x
    if t is Dual:
        return A.reshape_scalar(x)
    return np.asarray(x)


def _unsupported(name, what):
    raise NotImplementedError("deltaad: numpy.%s(..., %s) on dual numbers is not supported" % (name, what))


def _no_out(name, out):
    if out is not None:
        raise TypeError(
            "numpy.%s(..., out=...) would write duals into an array in place; deltaad arrays are "
            "immutable under differentiation: use the returned value" % name
        )


def _check_novalue(name, **kw):
    for k, v in kw.items():
        if v is not _NoValue and v is not None and not (k == "where" and v is True):
            _unsupported(name, "%s=" % k)


def _swap(x):
    return np.swapaxes(x, -1, -2)


def _expand_shape(shape, axes):
    """``shape`` with 1 at the reduced ``axes`` (what keepdims=True gives)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return normalize_axis_tuple(axis, ndim)


# ============================================================================================
# Elementwise functions of one argument


def elementwise_primitive(name, impl, partials, with_out=False):
    """An elementwise primitive of n arrays (the paper's Fig. 14 lifted to arrays, broadcasting).

    ``partials[j](*values)`` (``(*values, out)`` when ``with_out``) is the elementwise partial
    derivative with respect to argument ``j``, written with numpy functions; it is computed in
    the forward pass (the paper's ``Scale`` coefficient) and only for arguments that are duals.
    ``deltaad.primitive`` and the numpy ufunc rules are both built here.
    """
    n = len(partials)

    if n == 1:
        d0 = partials[0]

        def vjp1(out, vals, on):
            d = d0(vals[0], out) if with_out else d0(vals[0])

            def rule(ct):
                return (ct * d,)

            return rule

        def jvp1(out, vals, tans):
            return tans[0] * (d0(vals[0], out) if with_out else d0(vals[0]))

        return Primitive(name, impl, vjp1, jvp1)

    def derivs(vals, out, which):
        args = tuple(vals) + (out,) if with_out else tuple(vals)
        return [partials[j](*args) if which[j] else None for j in range(n)]

    def vjp(out, vals, on):
        ds = derivs(vals, out, on)
        shapes = [shape_of(v) for v in vals]

        def rule(ct):
            return tuple(None if d is None else unbroadcast(ct * d, s) for d, s in zip(ds, shapes))

        return rule

    def jvp(out, vals, tans):
        ds = derivs(vals, out, [t is not None for t in tans])
        t = None
        for tj, d in zip(tans, ds):
            if tj is not None:
                term = tj * d
                t = term if t is None else t + term
        return broadcast(t, shape_of(out))

    return Primitive(name, impl, vjp, jvp)


def _elementwise(name, impl, deriv):
    """A unary elementwise primitive; ``deriv(x, y)`` is dy/dx written with numpy functions."""
    prim = elementwise_primitive(name, impl, (deriv,), with_out=True)

    def fn(x):
        return apply(prim, (x,))

    fn.__name__ = name
    fn.primitive = prim
    return fn


def _linear_unary(name, impl, c):
    def vjp(out, vals, on):
        def rule(ct):
            return (ct * c,)

        return rule

    def jvp(out, vals, tans):
        return tans[0] * c

    prim = Primitive(name, impl, vjp, jvp)

    def fn(x):
        return apply(prim, (x,))

    fn.__name__ = name
    return fn


def _negative_vjp(out, vals, on):
    return _neg_rule


def _neg_rule(ct):
    return (-ct,)


NEGATIVE = Primitive("negative", np.negative, _negative_vjp, lambda out, vals, tans: -tans[0])


def negative(x):
    return apply(NEGATIVE, (x,))


def positive(x):
    if _is_dual(x) and x.trace.closed:
        raise A.escaped_error(x.trace.level)
    return x


def _sigmoid_impl(x):
    x = np.asarray(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softplus_impl(x):
    x = np.asarray(x)
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _vectorized(f):
    vf = np.vectorize(f, otypes=[float])

    def impl(x):
        x = np.asarray(x)
        r = vf(x)
        return r.astype(x.dtype) if x.dtype.kind == "f" else r

    return impl


def _scipy_special():
    """scipy.special if it can be imported (imported on first need: it is slow to import)."""
    try:
        from scipy import special
    except ImportError:  # pragma: no cover
        return None
    return special


def _special_impl(name, fallback):
    box = []

    def impl(x):
        if not box:
            sp = _scipy_special()
            box.append(getattr(sp, name) if sp is not None else _vectorized(fallback))
        return box[0](x)

    return impl


_erf_impl = _special_impl("erf", math.erf)
_erfc_impl = _special_impl("erfc", math.erfc)

_sign = np.sign

ELEMENTWISE = {}


def _def_unary(name, impl, deriv, ufunc=None):
    fn = _elementwise(name, impl, deriv)
    ELEMENTWISE[name] = fn
    if ufunc is not None:
        UFUNC_RULES[ufunc] = fn
    return fn


sin = _def_unary("sin", np.sin, lambda x, y: np.cos(x), np.sin)
cos = _def_unary("cos", np.cos, lambda x, y: -np.sin(x), np.cos)
tan = _def_unary("tan", np.tan, lambda x, y: 1.0 + y * y, np.tan)
arcsin = _def_unary("arcsin", np.arcsin, lambda x, y: 1.0 / np.sqrt(1.0 - x * x), np.arcsin)
arccos = _def_unary("arccos", np.arccos, lambda x, y: -1.0 / np.sqrt(1.0 - x * x), np.arccos)
arctan = _def_unary("arctan", np.arctan, lambda x, y: 1.0 / (1.0 + x * x), np.arctan)
sinh = _def_unary("sinh", np.sinh, lambda x, y: np.cosh(x), np.sinh)
cosh = _def_unary("cosh", np.cosh, lambda x, y: np.sinh(x), np.cosh)
tanh = _def_unary("tanh", np.tanh, lambda x, y: 1.0 - y * y, np.tanh)
arcsinh = _def_unary("arcsinh", np.arcsinh, lambda x, y: 1.0 / np.sqrt(x * x + 1.0), np.arcsinh)
arccosh = _def_unary("arccosh", np.arccosh, lambda x, y: 1.0 / np.sqrt(x * x - 1.0), np.arccosh)
arctanh = _def_unary("arctanh", np.arctanh, lambda x, y: 1.0 / (1.0 - x * x), np.arctanh)
exp = _def_unary("exp", np.exp, lambda x, y: y, np.exp)
expm1 = _def_unary("expm1", np.expm1, lambda x, y: y + 1.0, np.expm1)
exp2 = _def_unary("exp2", np.exp2, lambda x, y: y * _LN2, np.exp2)
log = _def_unary("log", np.log, lambda x, y: 1.0 / x, np.log)
log1p = _def_unary("log1p", np.log1p, lambda x, y: 1.0 / (1.0 + x), np.log1p)
log2 = _def_unary("log2", np.log2, lambda x, y: 1.0 / (x * _LN2), np.log2)
log10 = _def_unary("log10", np.log10, lambda x, y: 1.0 / (x * _LN10), np.log10)
sqrt = _def_unary("sqrt", np.sqrt, lambda x, y: 0.5 / y, np.sqrt)
cbrt = _def_unary("cbrt", np.cbrt, lambda x, y: 1.0 / (3.0 * (y * y)), np.cbrt)
absolute = _def_unary("absolute", np.absolute, lambda x, y: _sign(strip(x)), np.absolute)
UFUNC_RULES[np.fabs] = absolute
square = _def_unary("square", np.square, lambda x, y: 2.0 * x, np.square)
reciprocal = _def_unary("reciprocal", np.reciprocal, lambda x, y: -(y * y), np.reciprocal)
erf = _def_unary("erf", _erf_impl, lambda x, y: _TWO_OVER_SQRT_PI * np.exp(-(x * x)))
erfc = _def_unary("erfc", _erfc_impl, lambda x, y: -(_TWO_OVER_SQRT_PI * np.exp(-(x * x))))
sigmoid = _def_unary("sigmoid", _sigmoid_impl, lambda x, y: y * (1.0 - y))
softplus = _def_unary("softplus", _softplus_impl, lambda x, y: sigmoid(x))
_SCIPY_UFUNCS = {"erf": erf, "erfc": erfc, "expit": sigmoid}


def late_ufunc_rule(ufunc):
    """Rules for scipy.special's ufuncs, registered when the user has imported scipy."""
    import sys

    sp = sys.modules.get("scipy.special")
    rule = _SCIPY_UFUNCS.get(getattr(ufunc, "__name__", None))
    if sp is None or rule is None or getattr(sp, ufunc.__name__, None) is not ufunc:
        return None
    UFUNC_RULES[ufunc] = rule
    return rule

UFUNC_RULES[np.negative] = negative
UFUNC_RULES[np.positive] = positive
UFUNC_RULES[np.conjugate] = positive
ELEMENTWISE["negative"] = negative
ELEMENTWISE["absolute"] = absolute
UFUNC_RULES[np.deg2rad] = UFUNC_RULES[np.radians] = _linear_unary("deg2rad", np.deg2rad, math.pi / 180.0)
UFUNC_RULES[np.rad2deg] = UFUNC_RULES[np.degrees] = _linear_unary("rad2deg", np.rad2deg, 180.0 / math.pi)

for _u in (
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal, np.isnan,
    np.isinf, np.isfinite, np.signbit, np.sign, np.floor, np.ceil, np.trunc, np.rint,
    np.floor_divide, np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.heaviside,
    np.spacing,
):
    PLAIN_UFUNCS.add(_u)


# ============================================================================================
# Elementwise functions of two arguments (broadcasting; cotangents are summed back)


def _add_vjp(out, vals, on):
    sa = shape_of(vals[0])
    sb = shape_of(vals[1])
    oa, ob = on

    def rule(ct):
        return (unbroadcast(ct, sa) if oa else None, unbroadcast(ct, sb) if ob else None)

    return rule


def _add_jvp(out, vals, tans):
    ta, tb = tans
    s = shape_of(out)
    if ta is None:
        return broadcast(tb, s)
    if tb is None:
        return broadcast(ta, s)
    return broadcast(ta + tb, s)


ADD = Primitive("add", np.add, _add_vjp, _add_jvp)


def _sub_vjp(out, vals, on):
    sa = shape_of(vals[0])
    sb = shape_of(vals[1])
    oa, ob = on

    def rule(ct):
        # negate after summing down to b's shape: the same bits, but on b's (often much smaller)
        # shape rather than on the broadcast output's
        return (unbroadcast(ct, sa) if oa else None, -unbroadcast(ct, sb) if ob else None)

    return rule


def _sub_jvp(out, vals, tans):
    ta, tb = tans
    s = shape_of(out)
    if ta is None:
        return broadcast(-tb, s)
    if tb is None:
        return broadcast(ta, s)
    return broadcast(ta - tb, s)


SUB = Primitive("subtract", np.subtract, _sub_vjp, _sub_jvp)


def _mul_vjp(out, vals, on):
    a, b = vals
    oa, ob = on
    sa = shape_of(a)
    sb = shape_of(b)
    if oa and ob and a is b:
        # a square x * x: both parents' cotangents are the one product ct * x (same bits as
        # computing it twice); the sweep adds it to x's adjoint twice
        def square_rule(ct):
            g = unbroadcast(ct * a, sa)
            return (g, g)

        return square_rule
    if not ob:
        a = None
    if not oa:
        b = None

    def rule(ct):
        return (unbroadcast(ct * b, sa) if oa else None, unbroadcast(ct * a, sb) if ob else None)

    return rule


def _mul_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    if ta is None:
        return broadcast(a * tb, shape_of(out))
    if tb is None:
        return broadcast(ta * b, shape_of(out))
    return broadcast(ta * b + a * tb, shape_of(out))


MUL = Primitive("multiply", np.multiply, _mul_vjp, _mul_jvp)


def _div_vjp(out, vals, on):
    a, b = vals
    oa, ob = on
    sa = shape_of(a)
    sb = shape_of(b)
    y = out if ob else None

    def rule(ct):
        g = ct / b
        return (unbroadcast(g, sa) if oa else None, unbroadcast(-(g * y), sb) if ob else None)

    return rule


def _div_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    if tb is None:
        return broadcast(ta / b, shape_of(out))
    t = tb * out if ta is None else ta - tb * out
    return broadcast(t / b if ta is not None else -(t / b), shape_of(out))


DIV = Primitive("true_divide", np.true_divide, _div_vjp, _div_jvp)


def _binary(name, impl, partials):
    """An elementwise primitive of two arguments; ``partials(a, b, y, on) -> (da, db)``."""

    def vjp(out, vals, on):
        a, b = vals
        sa = shape_of(a)
        sb = shape_of(b)
        da, db = partials(a, b, out, on)
        oa, ob = on

        def rule(ct):
            return (unbroadcast(ct * da, sa) if oa else None, unbroadcast(ct * db, sb) if ob else None)

        return rule

    def jvp(out, vals, tans):
        a, b = vals
        ta, tb = tans
        da, db = partials(a, b, out, (ta is not None, tb is not None))
        t = None
        if ta is not None:
            t = ta * da
        if tb is not None:
            t = tb * db if t is None else t + tb * db
        return broadcast(t, shape_of(out))

    return Primitive(name, impl, vjp, jvp)


def _pow_partials(a, b, y, on):
    da = db = None
    if on[0]:
        if type(b) is float or type(b) is int or isinstance(b, np.generic):
            if b == 2:
                da = 2.0 * a
            elif b == 1:
                da = 1.0
            elif b == 0:
                da = 0.0  # a**0 is 1 everywhere: not 0 * inf at a == 0 (as the scalar rule)
            else:
                da = b * np.power(a, b - 1.0)
        elif type(b) is np.ndarray and (b == 0).any():
            # the same for the zero entries of a constant exponent; the safe exponent keeps the
            # unselected branch finite, so a second derivative does not meet 0 * inf either
            zero = b == 0
            da = np.where(zero, 0.0, b * np.power(a, np.where(zero, 1.0, b - 1.0)))
        else:
            da = b * np.power(a, b - 1.0)
    if on[1]:
        av = np.asarray(strip(a))
        pos = av > 0
        safe = np.where(pos, a, 1.0)
        db = np.where(pos, np.log(safe) * y, np.where(av == 0, 0.0, np.nan))
    return da, db


def _pow_impl(a, b):
    return np.power(a, b)


POWER = _binary("power", _pow_impl, _pow_partials)
FLOAT_POWER = _binary("float_power", np.float_power, _pow_partials)


def _choice_weights(a, b, y, on, greater, ignore_nan):
    av = np.asarray(strip(a))
    bv = np.asarray(strip(b))
    dt = dtype_of(y)
    eq = (av == bv) * 0.5
    wa = (greater(av, bv) + eq).astype(dt)
    wb = (greater(bv, av) + eq).astype(dt)
    na = np.isnan(av)
    nb = np.isnan(bv)
    if na.any() or nb.any():
        if ignore_nan:  # fmax/fmin: the non-nan argument is chosen
            wa = np.where(nb & ~na, 1.0, np.where(na, 0.0, wa)).astype(dt)
            wb = np.where(na & ~nb, 1.0, np.where(nb, 0.0, wb)).astype(dt)
        else:  # maximum/minimum propagate nan: it comes from the nan argument
            wa = np.where(na, 1.0, np.where(nb, 0.0, wa)).astype(dt)
            wb = np.where(na, 0.0, np.where(nb, 1.0, wb)).astype(dt)
    return wa, wb


MAXIMUM = _binary("maximum", np.maximum, lambda a, b, y, on: _choice_weights(a, b, y, on, np.greater, False))
MINIMUM = _binary("minimum", np.minimum, lambda a, b, y, on: _choice_weights(a, b, y, on, np.less, False))
FMAX = _binary("fmax", np.fmax, lambda a, b, y, on: _choice_weights(a, b, y, on, np.greater, True))
FMIN = _binary("fmin", np.fmin, lambda a, b, y, on: _choice_weights(a, b, y, on, np.less, True))


def _atan2_partials(y, x, v, on):
    r = x * x + y * y
    return (x / r if on[0] else None), (-y / r if on[1] else None)


def _hypot_partials(a, b, h, on):
    zero = np.asarray(strip(h)) == 0
    hs = np.where(zero, 1.0, h)
    return (np.where(zero, 0.0, a / hs) if on[0] else None), (np.where(zero, 0.0, b / hs) if on[1] else None)


def _logaddexp_partials(a, b, y, on):
    return (np.exp(a - y) if on[0] else None), (np.exp(b - y) if on[1] else None)


def _logaddexp2_partials(a, b, y, on):
    return (np.exp2(a - y) if on[0] else None), (np.exp2(b - y) if on[1] else None)


def _remainder_partials(a, b, y, on):
    return 1.0, (-np.floor_divide(strip(a), strip(b)) if on[1] else None)


def _fmod_partials(a, b, y, on):
    return 1.0, (-np.trunc(np.true_divide(strip(a), strip(b))) if on[1] else None)


ARCTAN2 = _binary("arctan2", np.arctan2, _atan2_partials)
HYPOT = _binary("hypot", np.hypot, _hypot_partials)
LOGADDEXP = _binary("logaddexp", np.logaddexp, _logaddexp_partials)
LOGADDEXP2 = _binary("logaddexp2", np.logaddexp2, _logaddexp2_partials)
REMAINDER = _binary("remainder", np.remainder, _remainder_partials)
FMOD = _binary("fmod", np.fmod, _fmod_partials)


def _binary_fn(prim):
    def fn(a, b):
        return apply(prim, (a, b))

    fn.__name__ = prim.name
    return fn


for _u, _p in (
    (np.add, ADD), (np.subtract, SUB), (np.multiply, MUL), (np.true_divide, DIV), (np.power, POWER),
    (np.float_power, FLOAT_POWER), (np.maximum, MAXIMUM), (np.minimum, MINIMUM), (np.fmax, FMAX),
    (np.fmin, FMIN), (np.arctan2, ARCTAN2), (np.hypot, HYPOT), (np.logaddexp, LOGADDEXP),
    (np.logaddexp2, LOGADDEXP2), (np.remainder, REMAINDER), (np.fmod, FMOD),
):
    UFUNC_RULES[_u] = _binary_fn(_p)
    ELEMENTWISE[_u.__name__] = UFUNC_RULES[_u]
ELEMENTWISE["power"] = UFUNC_RULES[np.power]


# ============================================================================================
# matmul (and through it dot, inner, tensordot, ...)


def _matmul_vjp(out, vals, on):
    a, b = vals
    sa = shape_of(a)
    sb = shape_of(b)
    oa, ob = on
    if not ob:
        a = None
    if not oa:
        b = None

    def rule(ct):
        if len(sa) == 1 and len(sb) == 1:
            return (ct * b if oa else None, ct * a if ob else None)
        sc = shape_of(ct)
        ct2 = ct
        if len(sa) == 1:
            ct2 = reshape(ct2, sc[:-1] + (1,) + sc[-1:])
        if len(sb) == 1:
            ct2 = reshape(ct2, shape_of(ct2) + (1,))
        ga = gb = None
        if oa:
            b2 = reshape(b, (sb[0], 1)) if len(sb) == 1 else b
            ga = np.matmul(ct2, _swap(b2))
            ga = reshape(unbroadcast(ga, (1,) + sa), sa) if len(sa) == 1 else unbroadcast(ga, sa)
        if ob:
            a2 = reshape(a, (1, sa[0])) if len(sa) == 1 else a
            gb = np.matmul(_swap(a2), ct2)
            gb = reshape(unbroadcast(gb, sb + (1,)), sb) if len(sb) == 1 else unbroadcast(gb, sb)
        return ga, gb

    return rule


def _matmul_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    t = None
    if ta is not None:
        t = np.matmul(ta, b)
    if tb is not None:
        u = np.matmul(a, tb)
        t = u if t is None else t + u
    return t


MATMUL = Primitive("matmul", np.matmul, _matmul_vjp, _matmul_jvp)


def matmul(a, b):
    if _ndim(a) == 0 or _ndim(b) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    return apply(MATMUL, (a, b))


UFUNC_RULES[np.matmul] = matmul


@_register(np.dot)
def dot(a, b, out=None):
    _no_out("dot", out)
    a = operand_or_raise(a)
    b = operand_or_raise(b)
    na, nb = _ndim(a), _ndim(b)
    if na == 0 or nb == 0:
        return apply(MUL, (a, b))
    if na <= 2 and nb <= 2:
        return apply(MATMUL, (a, b))
    return tensordot(a, b, axes=([-1], [0 if nb == 1 else -2]))


@_register(np.inner)
def inner(a, b):
    a = operand_or_raise(a)
    b = operand_or_raise(b)
    if _ndim(a) == 0 or _ndim(b) == 0:
        return apply(MUL, (a, b))
    return tensordot(a, b, axes=([-1], [-1]))


@_register(np.outer, _np("outer", np.linalg))
def outer(a, b, out=None):
    _no_out("outer", out)
    a = ravel(a)
    b = ravel(b)
    return apply(MUL, (reshape(a, (-1, 1)), reshape(b, (1, -1))))


@_register(np.vdot)
def vdot(a, b):
    return apply(MATMUL, (ravel(a), ravel(b)))


@_register(np.tensordot, _np("tensordot", np.linalg))
def tensordot(a, b, axes=2):
    a = _arr(a)
    b = _arr(b)
    sa, sb = shape_of(a), shape_of(b)
    na, nb = len(sa), len(sb)
    if isinstance(axes, (int, np.integer)):
        axes = int(axes)
        axes_a = list(range(na - axes, na))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [normalize_axis_index(int(i), na) for i in axes_a]
    axes_b = [normalize_axis_index(int(i), nb) for i in axes_b]
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j]:
            raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(na) if i not in axes_a]
    free_b = [i for i in range(nb) if i not in axes_b]
    k = int(np.prod([sa[i] for i in axes_a], dtype=np.int64))
    m = int(np.prod([sa[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([sb[i] for i in free_b], dtype=np.int64))
    at = reshape(transpose(a, free_a + axes_a), (m, k))
    bt = reshape(transpose(b, axes_b + free_b), (k, n))
    return reshape(apply(MATMUL, (at, bt)), tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))


def _vecdot(x1, x2, axis=-1):
    return sum_(apply(MUL, (x1, x2)), axis=axis)


if hasattr(np, "vecdot"):
    UFUNC_RULES[np.vecdot] = _vecdot
    if hasattr(np.linalg, "vecdot"):
        _register(np.linalg.vecdot)(lambda x1, x2, /, *, axis=-1: _vecdot(x1, x2, axis))


# ============================================================================================
# Reductions


def _sum_impl(v, axis, keepdims):
    return np.sum(v, axis=axis, keepdims=keepdims)


def _sum_vjp(out, vals, on, axis, keepdims):
    s = shape_of(vals[0])
    ks = _expand_shape(s, axis)

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        return (np.broadcast_to(g, s),)

    return rule


def _sum_jvp(out, vals, tans, axis, keepdims):
    return np.sum(tans[0], axis=axis, keepdims=keepdims)


SUM = Primitive("sum", _sum_impl, _sum_vjp, _sum_jvp)


def sum_(x, axis=None, keepdims=False):
    x = operand_or_raise(x)
    return apply(SUM, (x,), {"axis": _axes(axis, _ndim(x)), "keepdims": bool(keepdims)})


def _float_dtype(name, dtype):
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError("numpy.%s(..., dtype=%s) on duals would drop the derivative" % (name, dtype))


def _cast(r, dtype):
    """The result of a function given ``dtype=`` (already checked to be a float dtype)."""
    return r if dtype is None else astype(r, dtype)


@_register(np.sum)
def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue):
    _no_out("sum", out)
    _check_novalue("sum", initial=initial, where=where)
    _float_dtype("sum", dtype)
    r = sum_(a, axis, keepdims)
    return r if dtype is None else astype(r, dtype)


@_register(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NoValue):
    _no_out("mean", out)
    _check_novalue("mean", where=where)
    _float_dtype("mean", dtype)
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = _axes(axis, len(s))
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
        ov = ov.reshape(_expand_shape(xv.shape, axis))
    mask = (xv == ov) | (np.isnan(xv) & np.isnan(ov))
    return (mask / np.sum(mask, axis=axis, keepdims=True)).astype(xv.dtype if xv.dtype.kind == "f" else float)


def _choose_vjp(out, vals, on, axis, keepdims, f):
    x = vals[0]
    w = _choose_weights(x, out, axis, keepdims)
    ks = _expand_shape(shape_of(x), axis)

    def rule(ct):
        g = ct if keepdims else reshape(ct, ks)
        return (g * w,)

    return rule


def _choose_jvp(out, vals, tans, axis, keepdims, f):
    w = _choose_weights(vals[0], out, axis, keepdims)
    return np.sum(tans[0] * w, axis=axis, keepdims=keepdims)


CHOOSE = Primitive("max/min", _choose_impl, _choose_vjp, _choose_jvp)


def _chooser(name, f):
    def reduce(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue):
        _no_out(name, out)
        _check_novalue(name, initial=initial, where=where)
        x = operand_or_raise(a)
        return apply(CHOOSE, (x,), {"axis": _axes(axis, _ndim(x)), "keepdims": bool(keepdims), "f": f})

    reduce.__name__ = name
    return reduce


amax = _register(np.max, np.amax)(_chooser("max", np.max))
amin = _register(np.min, np.amin)(_chooser("min", np.min))


@_register(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    return amax(a, axis, out, keepdims) - amin(a, axis, out, keepdims)


@_register(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue, mean=_NoValue, correction=_NoValue):
    _no_out("var", out)
    _check_novalue("var", where=where, mean=mean)
    _float_dtype("var", dtype)
    if correction is not _NoValue:
        ddof = correction
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = _axes(axis, len(s))
    n = int(np.prod([s[i] for i in axes], dtype=np.int64))
    m = apply(SUM, (x,), {"axis": axes, "keepdims": True}) / max(n, 1)
    d = x - m
    r = apply(SUM, (d * d,), {"axis": axes, "keepdims": bool(keepdims)})
    return _cast(r / (n - ddof) if n - ddof > 0 else r * np.nan, dtype)


@_register(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NoValue, mean=_NoValue, correction=_NoValue):
    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction))


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
    return x, normalize_axis_index(axis, _ndim(x))


def _cumulative(name, prim, a, axis, dtype, out, kw):
    """cumsum/cumprod (and numpy 2's cumulative_*): checks, 0-d as 1-d, ``axis=None`` flat."""
    _no_out(name, out)
    _float_dtype(name, dtype)
    if kw.get("include_initial"):
        _unsupported(name.replace("cum", "cumulative_"), "include_initial=True")
    x = operand_or_raise(a)
    if _ndim(x) == 0:
        x = reshape(x, (1,))
    x, ax = _cum_axis(x, axis)
    return _cast(apply(prim, (x,), {"axis": ax}), dtype)


@_register(np.cumsum, _np("cumulative_sum"))
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


@_register(np.cumprod, _np("cumulative_prod"))
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
    ks = _expand_shape(s, axis)

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


@_register(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=_NoValue):
    _no_out("prod", out)
    _check_novalue("prod", initial=initial, where=where)
    _float_dtype("prod", dtype)
    x = operand_or_raise(a)
    return _cast(apply(PROD, (x,), {"axis": _axes(axis, _ndim(x)), "keepdims": bool(keepdims)}), dtype)


def stop_gradient(x):
    """The plain value of ``x`` at every level: a constant for every differentiation."""
    return strip(x)


def logsumexp(a, axis=None, keepdims=False):
    """``log(sum(exp(a), axis))`` computed stably (the max is subtracted as a constant)."""
    x = operand_or_raise(a)
    s = shape_of(x)
    axes = _axes(axis, len(s))
    xv = np.asarray(strip(x))
    m = np.max(xv, axis=axes, keepdims=True) if xv.size else np.zeros(_expand_shape(s, axes))
    m = np.where(np.isfinite(m), m, 0.0)
    r = log(apply(SUM, (exp(x - m),), {"axis": axes, "keepdims": True})) + m
    if not keepdims:
        r = reshape(r, tuple(n for i, n in enumerate(s) if i not in axes))
    return r


# ============================================================================================
# Shape functions (all linear: their rules are their own transposes)


def _transpose_impl(v, axes):
    return np.transpose(v, axes)


def _transpose_vjp(out, vals, on, axes):
    inv = tuple(int(i) for i in np.argsort(axes))

    def rule(ct):
        return (np.transpose(ct, inv),)

    return rule


TRANSPOSE = Primitive("transpose", _transpose_impl, _transpose_vjp, lambda out, vals, tans, axes: np.transpose(tans[0], axes))


def transpose(x, axes=None):
    x = operand_or_raise(x)
    nd = _ndim(x)
    axes = tuple(range(nd - 1, -1, -1)) if axes is None else tuple(normalize_axis_index(int(i), nd) for i in axes)
    if len(axes) != nd or sorted(axes) != list(range(nd)):
        raise ValueError("axes don't match array")
    if axes == tuple(range(nd)):
        return x
    return apply(TRANSPOSE, (x,), {"axes": axes})


@_register(np.transpose, _np("permute_dims"))
def _np_transpose(a, axes=None):
    return transpose(a, axes)


@_register(np.swapaxes)
def swapaxes(a, axis1, axis2):
    x = operand_or_raise(a)
    nd = _ndim(x)
    i, j = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(x, perm)


@_register(_np("matrix_transpose"), _np("matrix_transpose", np.linalg))
def matrix_transpose(x):
    if _ndim(x) < 2:
        raise ValueError("matrix_transpose: input must have at least 2 dimensions")
    return swapaxes(x, -1, -2)


@_register(np.moveaxis)
def moveaxis(a, source, destination):
    x = operand_or_raise(a)
    nd = _ndim(x)
    source = normalize_axis_tuple(source, nd, "source")
    destination = normalize_axis_tuple(destination, nd, "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(nd) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(x, order)


@_register(np.reshape)
def _np_reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    x = operand_or_raise(a)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(n) for n in shape)
    if order not in ("C", "F", "A"):
        raise ValueError("reshape: order must be 'C', 'F' or 'A'")
    if _index_order(x, order, "reshape") == "F":
        return transpose(reshape(transpose(x), shape[::-1]))
    return reshape(x, shape)


def _index_order(x, order, name):
    """'C' or 'F': numpy's ``order`` for ``x``'s value. 'A' is F for a Fortran-contiguous
    array (and C otherwise); 'K' (memory order) is C or F for an array contiguous in one of
    them; other memory layouts are an error rather than a silently different order."""
    if order in ("C", "F"):
        return order
    if order is None:
        return "C"
    v = np.asarray(strip(x))
    f_only = v.flags.f_contiguous and not v.flags.c_contiguous
    if order == "A":
        return "F" if f_only else "C"
    if order == "K":
        if v.flags.c_contiguous or v.ndim <= 1:
            return "C"
        if f_only:
            return "F"
        _unsupported(name, "order='K' for an array that is neither C- nor Fortran-contiguous")
    raise ValueError("%s: order must be one of 'C', 'F', 'A' or 'K'" % name)


@_register(np.ravel)
def ravel(a, order="C"):
    x = operand_or_raise(a)
    if _index_order(x, order, "ravel") == "F":
        x = transpose(x)
    return reshape(x, (-1,))


@_register(np.expand_dims)
def expand_dims(a, axis):
    x = operand_or_raise(a)
    s = shape_of(x)
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    nd = len(s) + len(axis)
    axes = normalize_axis_tuple(axis, nd)
    it = iter(s)
    return reshape(x, tuple(1 if i in axes else next(it) for i in range(nd)))


@_register(np.squeeze)
def squeeze(a, axis=None):
    x = operand_or_raise(a)
    s = shape_of(x)
    if axis is None:
        axes = tuple(i for i, n in enumerate(s) if n == 1)
    else:
        axes = normalize_axis_tuple(axis, len(s))
        for i in axes:
            if s[i] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(x, tuple(n for i, n in enumerate(s) if i not in axes))


def _atleast(x, n):
    x = _arr(x)
    s = shape_of(x)
    if len(s) >= n:
        return x
    if n == 1:
        return reshape(x, (1,))
    if n == 2:
        return reshape(x, (1,) + s if len(s) == 1 else (1, 1))
    if len(s) == 0:
        return reshape(x, (1, 1, 1))
    if len(s) == 1:
        return reshape(x, (1,) + s + (1,))
    return reshape(x, s + (1,))


def _atleast_fn(n):
    def f(*arys):
        r = [_atleast(a, n) for a in arys]
        return r[0] if len(r) == 1 else tuple(r)

    return f


_register(np.atleast_1d)(_atleast_fn(1))
_register(np.atleast_2d)(_atleast_fn(2))
_register(np.atleast_3d)(_atleast_fn(3))


def _broadcast_impl(v, shape):
    return np.broadcast_to(v, shape)


def _broadcast_vjp(out, vals, on, shape):
    s = shape_of(vals[0])

    def rule(ct):
        return (unbroadcast(ct, s),)

    return rule


BROADCAST = Primitive("broadcast_to", _broadcast_impl, _broadcast_vjp, lambda out, vals, tans, shape: np.broadcast_to(tans[0], shape))


@_register(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    x = operand_or_raise(array)
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(n) for n in shape)
    if shape_of(x) == shape:
        return x
    return apply(BROADCAST, (x,), {"shape": shape})


@_register(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    xs = [operand_or_raise(a) for a in args]
    shape = np.broadcast_shapes(*[shape_of(x) for x in xs])
    return tuple(broadcast_to(x, shape) for x in xs)


def _concat_impl(*vals, axis):
    return np.concatenate(vals, axis=axis)


def _concat_vjp(out, vals, on, axis):
    sizes = [shape_of(v)[axis] for v in vals]
    pre = (slice(None),) * axis

    def rule(ct):
        cts = []
        o = 0
        for n, use in zip(sizes, on):
            cts.append(getitem(ct, pre + (slice(o, o + n),), True) if use else None)
            o += n
        return tuple(cts)

    return rule


def _concat_jvp(out, vals, tans, axis):
    ts = [A.zeros_of(v) if t is None else t for v, t in zip(vals, tans)]
    return apply(CONCAT, ts, {"axis": axis})


CONCAT = Primitive("concatenate", _concat_impl, _concat_vjp, _concat_jvp)


@_register(np.concatenate, _np("concat"))
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("concatenate", out)
    _float_dtype("concatenate", dtype)
    xs = [operand_or_raise(a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        xs = [ravel(x) for x in xs]
        axis = 0
    for x in xs:
        if _ndim(x) == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = _ndim(xs[0])
    return _cast(apply(CONCAT, xs, {"axis": normalize_axis_index(axis, nd)}), dtype)


def _is_scalar_item(e):
    t = type(e)
    return t is Dual or t is float or t is int or isinstance(e, np.generic)


@_register(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("stack", out)
    _float_dtype("stack", dtype)
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    if all(_is_scalar_item(e) for e in arrays):
        normalize_axis_index(axis, 1)
        return _cast(A.pack_scalars(arrays), dtype)
    xs = [operand_or_raise(a) for a in arrays]
    shapes = {shape_of(x) for x in xs}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    s = shapes.pop()
    ax = normalize_axis_index(axis, len(s) + 1)
    es = s[:ax] + (1,) + s[ax:]
    return _cast(apply(CONCAT, [reshape(x, es) for x in xs], {"axis": ax}), dtype)


@_register(np.vstack, _np("row_stack"))
def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([_atleast(a, 2) for a in tup], axis=0, dtype=dtype)


@_register(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    xs = [_atleast(a, 1) for a in tup]
    return concatenate(xs, axis=0 if xs and _ndim(xs[0]) == 1 else 1, dtype=dtype)


@_register(np.dstack)
def dstack(tup):
    return concatenate([_atleast(a, 3) for a in tup], axis=2)


@_register(np.column_stack)
def column_stack(tup):
    xs = []
    for a in tup:
        x = _arr(a)
        xs.append(reshape(x, (-1, 1)) if _ndim(x) < 2 else x)
    return concatenate(xs, axis=1)


@_register(np.append)
def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def _split(ary, indices_or_sections, axis, even):
    x = _arr(ary)
    s = shape_of(x)
    ax = normalize_axis_index(axis, len(s))
    n = s[ax]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        if even and n % k:
            raise ValueError("array split does not result in an equal division")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        bounds = [0]
        for z in sizes:
            bounds.append(bounds[-1] + z)
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    pre = (slice(None),) * ax
    return [getitem(x, pre + (slice(lo, hi),), True) for lo, hi in zip(bounds[:-1], bounds[1:])]


@_register(np.split)
def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, True)


@_register(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, False)


@_register(np.hsplit)
def hsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 1 if _ndim(ary) > 1 else 0, True)


@_register(np.vsplit)
def vsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 0, True)


@_register(np.dsplit)
def dsplit(ary, indices_or_sections):
    return _split(ary, indices_or_sections, 2, True)


@_register(_np("unstack"))
def unstack(x, /, *, axis=0):
    x = _arr(x)
    ax = normalize_axis_index(axis, _ndim(x))
    return tuple(getitem(x, (slice(None),) * ax + (i,), True) for i in range(shape_of(x)[ax]))


@_register(np.flip)
def flip(m, axis=None):
    x = _arr(m)
    nd = _ndim(x)
    axes = _axes(axis, nd)
    return getitem(x, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd)), True)


@_register(np.fliplr)
def fliplr(m):
    if _ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


@_register(np.flipud)
def flipud(m):
    if _ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


@_register(np.roll)
def roll(a, shift, axis=None):
    x = _arr(a)
    if axis is None:
        s = shape_of(x)
        return reshape(roll(ravel(x), shift, 0), s)
    nd = _ndim(x)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    total = {}
    for sh, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
        ax = normalize_axis_index(ax, nd)
        total[ax] = total.get(ax, 0) + sh
    for ax, sh in total.items():
        n = shape_of(x)[ax]
        if n == 0:
            continue
        k = sh % n
        if k:
            pre = (slice(None),) * ax
            x = apply(CONCAT, [getitem(x, pre + (slice(n - k, None),), True), getitem(x, pre + (slice(0, n - k),), True)], {"axis": ax})
    return x


@_register(np.tile)
def tile(A_, reps):
    x = _arr(A_)
    reps = tuple(int(r) for r in reps) if isinstance(reps, (tuple, list, np.ndarray)) else (int(reps),)
    s = shape_of(x)
    d = max(len(s), len(reps))
    s = (1,) * (d - len(s)) + s
    reps = (1,) * (d - len(reps)) + reps
    x = reshape(x, sum(((1, n) for n in s), ()))
    x = broadcast_to(x, sum(((r, n) for r, n in zip(reps, s)), ()))
    return reshape(x, tuple(r * n for r, n in zip(reps, s)))


@_register(np.repeat)
def repeat(a, repeats, axis=None):
    x = _arr(a)
    if axis is None:
        x = ravel(x)
        axis = 0
    s = shape_of(x)
    ax = normalize_axis_index(axis, len(s))
    n = s[ax]
    r = np.asarray(repeats)
    if r.ndim == 0 or r.size == 1:
        k = int(r.reshape(-1)[0]) if r.ndim else int(r)
        x = reshape(x, s[: ax + 1] + (1,) + s[ax + 1 :])
        x = broadcast_to(x, s[: ax + 1] + (k,) + s[ax + 1 :])
        return reshape(x, s[:ax] + (n * k,) + s[ax + 1 :])
    idx = np.repeat(np.arange(n), r)
    return getitem(x, (slice(None),) * ax + (idx,), False)


def _as_pairs(x, ndim):
    x = np.array(x)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            return ((int(x[0]), int(x[0])),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            return ((int(x[0]), int(x[1])),) * ndim
    return tuple((int(a), int(b)) for a, b in np.broadcast_to(x, (ndim, 2)).tolist())


def _pad_impl(v, pw, cval):
    return np.pad(v, pw, mode="constant", constant_values=cval)


def _pad_vjp(out, vals, on, pw, cval):
    s = shape_of(vals[0])
    idx = tuple(slice(lo, lo + n) for (lo, _), n in zip(pw, s))

    def rule(ct):
        return (getitem(ct, idx, True),)

    return rule


PAD = Primitive("pad", _pad_impl, _pad_vjp, lambda out, vals, tans, pw, cval: apply(PAD, (tans[0],), {"pw": pw, "cval": 0}))


@_register(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    x = _arr(array)
    s = shape_of(x)
    pw = _as_pairs(pad_width, len(s))
    if mode == "constant":
        c = kwargs.pop("constant_values", 0)
        if kwargs:
            _unsupported("pad", ", ".join(kwargs))
        if _is_dual(c) or (isinstance(c, (list, tuple)) and A._has_dual(c)):
            _unsupported("pad", "constant_values=<dual>")
        return apply(PAD, (x,), {"pw": pw, "cval": c})
    if mode in ("edge", "reflect", "symmetric", "wrap"):
        # These modes copy entries: pad an array of indices the same way and gather. An odd
        # reflection (2 * edge - x) computes new values, which this cannot express.
        if kwargs.get("reflect_type", "even") != "even":
            _unsupported("pad", "reflect_type=%r" % (kwargs["reflect_type"],))
        kwargs.pop("reflect_type", None)
        if kwargs:
            _unsupported("pad", ", ".join(kwargs))
        idx = np.pad(np.arange(int(np.prod(s, dtype=np.int64))).reshape(s), pw, mode=mode)
        return getitem(ravel(x), idx, False)
    raise NotImplementedError("deltaad: numpy.pad(..., mode=%r) on dual numbers is not supported" % (mode,))


def _diag_indices(m, n, k):
    if k >= 0:
        c = max(0, min(m, n - k))
        rows = np.arange(c)
        return rows, rows + k
    c = max(0, min(m + k, n))
    rows = np.arange(c)
    return rows - k, rows


@_register(np.diag)
def diag(v, k=0):
    x = _arr(v)
    s = shape_of(x)
    if len(s) == 1:
        n = s[0] + abs(k)
        rows, cols = _diag_indices(n, n, k)
        return A.update(np.zeros((n, n), dtype=dtype_of(x)), x, (rows, cols), "add", True)
    if len(s) == 2:
        rows, cols = _diag_indices(s[0], s[1], k)
        return getitem(x, (rows, cols), True)
    raise ValueError("Input must be 1- or 2-d.")


@_register(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    x = _arr(a)
    nd = _ndim(x)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    i, j = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    if i == j:
        raise ValueError("axis1 and axis2 cannot be the same")
    x = moveaxis(x, (i, j), (-2, -1))
    s = shape_of(x)
    rows, cols = _diag_indices(s[-2], s[-1], offset)
    return getitem(x, (Ellipsis, rows, cols), True)


@_register(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out("trace", out)
    _float_dtype("trace", dtype)
    return _cast(sum_(diagonal(a, offset, axis1, axis2), axis=-1), dtype)


if hasattr(np.linalg, "diagonal"):
    _register(np.linalg.diagonal)(lambda x, /, *, offset=0: diagonal(x, offset, -2, -1))
    _register(np.linalg.trace)(lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype))


def _tri_mask(x, k, lower):
    s = shape_of(x)
    n, m = (s[-2], s[-1]) if len(s) >= 2 else (s[-1], s[-1])
    t = np.tri(n, m, k=k if lower else k - 1, dtype=bool)
    return t if lower else ~t


@_register(np.tril)
def tril(m, k=0):
    x = _arr(m)
    return where(_tri_mask(x, k, True), x, 0.0)


@_register(np.triu)
def triu(m, k=0):
    x = _arr(m)
    return where(_tri_mask(x, k, False), x, 0.0)


@_register(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("take", out)
    x = _arr(a)
    if axis is None:
        x = ravel(x)
        axis = 0
    s = shape_of(x)
    ax = normalize_axis_index(axis, len(s))
    idx = np.asarray(indices)
    n = s[ax]
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    if idx.ndim == 0:
        return getitem(x, (slice(None),) * ax + (int(idx),), True)
    return getitem(x, (slice(None),) * ax + (idx,), False)


def _along_axis_index(indices, axis, shape):
    nd = len(shape)
    idx = []
    for i in range(nd):
        if i == axis:
            idx.append(indices)
        else:
            sh = [1] * nd
            sh[i] = shape[i]
            idx.append(np.arange(shape[i]).reshape(sh))
    return tuple(idx)


@_register(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    x = _arr(arr)
    if axis is None:
        x = ravel(x)
        axis = 0
    ax = normalize_axis_index(axis, _ndim(x))
    return getitem(x, _along_axis_index(np.asarray(indices), ax, shape_of(x)), False)


@_register(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        _unsupported("sort", "order=")
    x = _arr(a)
    if axis is None:
        x = ravel(x)
        axis = -1
    if _ndim(x) == 0:
        raise getattr(np, "exceptions", np).AxisError("axis -1 is out of bounds for array of dimension 0")
    ax = normalize_axis_index(axis, _ndim(x))
    perm = np.argsort(np.asarray(strip(x)), axis=ax, kind="stable")
    return getitem(x, _along_axis_index(perm, ax, shape_of(x)), True)


def _where_impl(x, y, cond):
    return np.where(cond, x, y)


def _where_vjp(out, vals, on, cond):
    sx = shape_of(vals[0])
    sy = shape_of(vals[1])
    ox, oy = on

    def rule(ct):
        return (
            unbroadcast(np.where(cond, ct, 0.0), sx) if ox else None,
            unbroadcast(np.where(cond, 0.0, ct), sy) if oy else None,
        )

    return rule


def _where_jvp(out, vals, tans, cond):
    tx, ty = tans
    return np.where(cond, 0.0 if tx is None else tx, 0.0 if ty is None else ty)


WHERE = Primitive("where", _where_impl, _where_vjp, _where_jvp)


def _plain_cond(c):
    if type(c) is np.ndarray and c.dtype.kind == "O":
        return np.asarray(A.asarray_plain(c)).astype(bool)
    return np.asarray(strip(c)).astype(bool)


@_register(np.where)
def where(condition, x=_NoValue, y=_NoValue):
    if x is _NoValue and y is _NoValue:
        return np.nonzero(_plain_cond(condition))
    if x is _NoValue or y is _NoValue:
        raise ValueError("either both or neither of x and y should be given")
    return apply(WHERE, (operand_or_raise(x), operand_or_raise(y)), {"cond": _plain_cond(condition)})


@_register(np.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = operand_or_raise(default)
    for c, ch in reversed(list(zip(condlist, choicelist))):
        out = where(c, ch, out)
    return out


@_register(np.clip)
def clip(a, a_min=_NoValue, a_max=_NoValue, out=None, *, min=_NoValue, max=_NoValue, **kwargs):
    _no_out("clip", out)
    lo = a_min if a_min is not _NoValue else (min if min is not _NoValue else None)
    hi = a_max if a_max is not _NoValue else (max if max is not _NoValue else None)
    x = operand_or_raise(a)
    r = x
    if lo is not None:
        lo = operand_or_raise(lo)
        r = apply(WHERE, (lo, r), {"cond": np.asarray(np.asarray(strip(x)) < np.asarray(strip(lo)))})
    if hi is not None:
        hi = operand_or_raise(hi)
        r = apply(WHERE, (hi, r), {"cond": np.asarray(np.asarray(strip(r)) > np.asarray(strip(hi)))})
    return r


@_register(np.diff)
def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    x = _arr(a)
    ax = normalize_axis_index(axis, _ndim(x))
    parts = []
    if prepend is not _NoValue:
        p = _arr(prepend)
        if _ndim(p) == 0:
            s = list(shape_of(x))
            s[ax] = 1
            p = broadcast_to(p, tuple(s))
        parts.append(p)
    parts.append(x)
    if append is not _NoValue:
        p = _arr(append)
        if _ndim(p) == 0:
            s = list(shape_of(x))
            s[ax] = 1
            p = broadcast_to(p, tuple(s))
        parts.append(p)
    if len(parts) > 1:
        x = concatenate(parts, axis=ax)
    pre = (slice(None),) * ax
    for _ in range(n):
        x = getitem(x, pre + (slice(1, None),), True) - getitem(x, pre + (slice(None, -1),), True)
    return x


# ============================================================================================
# Casts, copies and functions whose result carries no derivative


def _astype_vjp(out, vals, on, dtype):
    dt = dtype_of(vals[0])

    def rule(ct):
        return (astype(ct, dt),)

    return rule


ASTYPE = Primitive("astype", lambda v, dtype: v.astype(dtype), _astype_vjp, lambda out, vals, tans, dtype: astype(tans[0], dtype))


def astype(x, dtype, copy=True):
    dt = np.dtype(dtype)
    tx = type(x)
    if tx is not ArrayDual and tx is not Dual:
        return np.asarray(x).astype(dt)
    if dt.kind == "c":
        raise A._complex_error()
    if dt.kind != "f":  # piecewise constant: a plain result (derivative zero)
        return np.asarray(strip(x)).astype(dt)
    if dt == dtype_of(x):
        return x
    return apply(ASTYPE, (x,), {"dtype": dt})


if hasattr(np, "astype"):
    _register(np.astype)(lambda x, dtype, /, *, copy=True, **kw: astype(x, dtype))


@_register(np.copy)
def copy(a, order="K", subok=False):
    return a


@_register(np.real)
def real(val):
    return val


@_register(np.imag)
def imag(val):
    return np.zeros(shape_of(val), dtype=dtype_of(val))


def _strip_arg(a):
    t = type(a)
    if t is ArrayDual or t is Dual:
        return strip(a)
    if t is list or t is tuple:
        return t(_strip_arg(e) for e in a)
    if t is np.ndarray and a.dtype.kind == "O":
        return A.asarray_plain(a)
    return a


def _plain(func):
    def impl(*args, **kwargs):
        return func(*[_strip_arg(a) for a in args], **{k: _strip_arg(v) for k, v in kwargs.items()})

    impl.__name__ = func.__name__
    return impl


for _f in (
    "shape ndim size argmax argmin argsort argwhere nonzero flatnonzero count_nonzero isclose "
    "allclose array_equal array_equiv any all searchsorted zeros_like ones_like empty_like round "
    "around fix result_type may_share_memory shares_memory iscomplexobj isrealobj iscomplex isreal "
    "digitize nanargmax nanargmin isin sign floor ceil trunc rint"
).split():
    _fn = getattr(np, _f, None)
    if _fn is not None and not isinstance(_fn, np.ufunc):
        FUNCTION_RULES[_fn] = _plain(_fn)


@_register(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    s = shape_of(a) if shape is None else shape
    if _is_dual(fill_value):
        return broadcast_to(_arr(fill_value), s) * 1.0
    return np.full(s, fill_value, dtype=dtype or dtype_of(a))


# ============================================================================================
# Linear algebra


def _solve_vjp(out, vals, on):
    a, b = vals
    sa, sb = shape_of(a), shape_of(b)
    vec = len(sb) == 1
    oa, ob = on
    x = out if oa else None

    def rule(ct):
        if vec:
            ct2 = reshape(ct, shape_of(ct) + (1,))
            gb2 = np.linalg.solve(_swap(a), ct2)
            gb = reshape(unbroadcast(gb2, sb + (1,)), sb) if ob else None
            ga = unbroadcast(-np.matmul(gb2, _swap(reshape(x, shape_of(x) + (1,)))), sa) if oa else None
            return ga, gb
        gb2 = np.linalg.solve(_swap(a), ct)
        return (unbroadcast(-np.matmul(gb2, _swap(x)), sa) if oa else None, unbroadcast(gb2, sb) if ob else None)

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


@_register(np.linalg.solve)
def solve(a, b):
    return apply(SOLVE, (_arr(a), _arr(b)))


def _inv_vjp(out, vals, on):
    def rule(ct):
        yt = _swap(out)
        return (-np.matmul(yt, np.matmul(ct, yt)),)

    return rule


INV = Primitive("linalg.inv", np.linalg.inv, _inv_vjp, lambda out, vals, tans: -np.matmul(out, np.matmul(tans[0], out)))


@_register(np.linalg.inv)
def inv(a):
    return apply(INV, (_arr(a),))


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
        return _expand2(out) * _swap(np.linalg.inv(a))
    except np.linalg.LinAlgError:
        if _is_dual(a):
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


@_register(np.linalg.det)
def det(a):
    return apply(DET, (_arr(a),))


def _logdet_impl(a):
    return np.linalg.slogdet(a)[1]


def _logdet_vjp(out, vals, on):
    a = vals[0]

    def rule(ct):
        return (_expand2(ct) * _swap(np.linalg.inv(a)),)

    return rule


LOGDET = Primitive("linalg.slogdet", _logdet_impl, _logdet_vjp, lambda out, vals, tans: _trace_last(np.linalg.solve(vals[0], tans[0])))
_SlogdetResult = type(np.linalg.slogdet(np.eye(1)))


@_register(np.linalg.slogdet)
def slogdet(a):
    x = _arr(a)
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
    return 0.5 * (x + _swap(x))


def _chol_vjp(out, vals, on):
    L = out

    def rule(ct):
        Lt = _swap(L)
        p = _phi(np.matmul(Lt, ct))
        z = _swap(np.linalg.solve(Lt, _swap(np.linalg.solve(Lt, p))))
        return (_sym(z),)

    return rule


def _chol_jvp(out, vals, tans):
    L = out
    s = _sym(tans[0])
    m = _swap(np.linalg.solve(L, _swap(np.linalg.solve(L, s))))
    return np.matmul(L, _phi(m))


CHOLESKY = Primitive("linalg.cholesky", np.linalg.cholesky, _chol_vjp, _chol_jvp)


@_register(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    L = apply(CHOLESKY, (_arr(a),))
    return _swap(L) if upper else L


def _norm2_impl(v, axis, keepdims):
    return np.sqrt(np.sum(v * v, axis=axis, keepdims=keepdims))


def _norm2_weights(x, out, axis, keepdims):
    o = out if keepdims else reshape(out, _expand_shape(shape_of(x), axis))
    zero = np.asarray(strip(o)) == 0
    return np.where(zero, 0.0, x / np.where(zero, 1.0, o))


def _norm2_vjp(out, vals, on, axis, keepdims):
    w = _norm2_weights(vals[0], out, axis, keepdims)
    ks = _expand_shape(shape_of(vals[0]), axis)

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


def power(a, b):
    return apply(POWER, (a, b))


@_register(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    x = _arr(x)
    nd = _ndim(x)
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
            r = reshape(r, _expand_shape(shape_of(x), axis))
        return r
    raise NotImplementedError("deltaad: numpy.linalg.norm(..., ord=%r) for matrices (needs an SVD) is not supported" % (ord,))


if hasattr(np.linalg, "vector_norm"):

    @_register(np.linalg.vector_norm)
    def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
        x = _arr(x)
        if axis is None:
            r = _vector_norm(ravel(x), ord, 0, False)
            return reshape(r, (1,) * _ndim(x)) if keepdims else r
        axes = normalize_axis_tuple(axis, _ndim(x))
        if len(axes) == 1:
            return _vector_norm(x, ord, axes[0], keepdims)
        if ord == 2:
            return _norm2(x, axes, keepdims)
        _unsupported("linalg.vector_norm", "ord=%r with several axes" % (ord,))

    @_register(np.linalg.matrix_norm)
    def matrix_norm(x, /, *, keepdims=False, ord="fro"):
        return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@_register(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    _no_out("linalg.multi_dot", out)
    arrays = list(arrays)
    r = arrays[0]
    for b in arrays[1:]:
        r = matmul(_arr(r), _arr(b))
    return r


_register(_np("matmul", np.linalg))(lambda x1, x2, /: matmul(_arr(x1), _arr(x2)))


# ============================================================================================
# einsum


_LETTERS = string.ascii_letters


def _parse_einsum(operands):
    """``(input terms, output term, arrays)`` with every ellipsis spelled out as letters."""
    if isinstance(operands[0], str):
        subs = operands[0].replace(" ", "")
        arrays = list(operands[1:])
    else:  # interleaved form: a, [0, 1], b, [1, 2], [0, 2]
        ops = list(operands)
        arrays = ops[0::2]
        sublists = ops[1::2]
        out_list = None
        if len(arrays) > len(sublists):
            out_list = arrays.pop()  # the trailing output sublist

        def conv(lst):
            return "".join("..." if s is Ellipsis else _LETTERS[s] for s in lst)

        subs = ",".join(conv(s) for s in sublists)
        if out_list is not None:
            subs += "->" + conv(out_list)
    arrays = [operand_or_raise(a) for a in arrays]
    if "->" in subs:
        ins, out = subs.split("->")
        explicit = True
    else:
        ins, out = subs, None
        explicit = False
    terms = ins.split(",")
    if len(terms) != len(arrays):
        raise ValueError("einsum: %d operands for %d subscripts" % (len(arrays), len(terms)))
    used = set(subs) - set(".,->")
    free = [c for c in _LETTERS if c not in used]
    nell = 0
    for t, x in zip(terms, arrays):
        if "..." in t:
            nell = max(nell, _ndim(x) - (len(t) - 3))
    ell = "".join(free[:nell])
    new_terms = []
    for t, x in zip(terms, arrays):
        if "..." in t:
            k = _ndim(x) - (len(t) - 3)
            t = t.replace("...", ell[nell - k :] if k else "")
        new_terms.append(t)
    if not explicit:
        counts = {}
        for t in new_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return new_terms, out, arrays


def _einsum_impl(*vals, spec, optimize):
    return np.einsum(spec, *vals, optimize=optimize)


def _einsum_grad(k, ct, terms, out, vals, optimize):
    """The cotangent of operand ``k``: an einsum of the output cotangent with the others."""
    tk = terms[k]
    sk = shape_of(vals[k])
    others = [(t, v) for i, (t, v) in enumerate(zip(terms, vals)) if i != k]
    present = set(out).union(*[set(t) for t, _ in others]) if others else set(out)
    used = set(out).union(*[set(t) for t in terms])
    free = [c for c in _LETTERS if c not in used]
    extra_terms = []
    extra_vals = []
    target = []
    seen = set()
    for c, n in zip(tk, sk):
        if c in seen:  # a repeated letter: the cotangent lives on a diagonal
            f = free.pop(0)
            extra_terms.append(c + f)
            extra_vals.append(np.eye(n))
            target.append(f)
            continue
        seen.add(c)
        target.append(c)
        if c not in present:
            extra_terms.append(c)
            extra_vals.append(np.ones(n))
            present.add(c)
    spec = ",".join([out] + [t for t, _ in others] + extra_terms) + "->" + "".join(target)
    g = np.einsum(spec, ct, *[v for _, v in others], *extra_vals, optimize=optimize)
    if shape_of(g) != sk:  # operand dimensions of size 1 that were broadcast
        axes = tuple(i for i, (a, b) in enumerate(zip(shape_of(g), sk)) if a != b)
        g = np.sum(g, axis=axes, keepdims=True)
    return g


def _einsum_vjp(out, vals, on, spec, optimize):
    ins, o = spec.split("->")
    terms = ins.split(",")

    if not isinstance(optimize, (bool, str)):
        optimize = True  # an explicit path fits the forward contraction only, not the gradients'

    def rule(ct):
        return tuple(_einsum_grad(k, ct, terms, o, vals, optimize) if use else None for k, use in enumerate(on))

    return rule


def _einsum_jvp(out, vals, tans, spec, optimize):
    t = None
    for k, tk in enumerate(tans):
        if tk is None:
            continue
        ops = list(vals)
        ops[k] = tk
        u = np.einsum(spec, *ops, optimize=optimize)
        t = u if t is None else t + u
    return t


EINSUM = Primitive("einsum", _einsum_impl, _einsum_vjp, _einsum_jvp)


@_register(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    _no_out("einsum", out)
    if kwargs.get("dtype") is not None:
        _float_dtype("einsum", kwargs["dtype"])
    terms, o, arrays = _parse_einsum(operands)
    arrays = [_arr(a) for a in arrays]
    r = apply(EINSUM, arrays, {"spec": ",".join(terms) + "->" + o, "optimize": optimize})
    return _cast(r, kwargs.get("dtype"))


# ============================================================================================
# ufunc methods: reduce, accumulate, outer


REDUCE_RULES[(np.add, "reduce")] = lambda a, axis=0, keepdims=False, initial=_NoValue, where=True: _np_sum(a, axis, keepdims=keepdims, initial=initial, where=_NoValue if where is True else where)
REDUCE_RULES[(np.multiply, "reduce")] = lambda a, axis=0, keepdims=False, initial=_NoValue, where=True: prod(a, axis, keepdims=keepdims, initial=initial, where=_NoValue if where is True else where)
REDUCE_RULES[(np.maximum, "reduce")] = lambda a, axis=0, keepdims=False, initial=_NoValue, where=True: amax(a, axis, keepdims=keepdims, initial=initial, where=_NoValue if where is True else where)
REDUCE_RULES[(np.minimum, "reduce")] = lambda a, axis=0, keepdims=False, initial=_NoValue, where=True: amin(a, axis, keepdims=keepdims, initial=initial, where=_NoValue if where is True else where)
REDUCE_RULES[(np.logaddexp, "reduce")] = lambda a, axis=0, keepdims=False: logsumexp(a, axis, keepdims)
REDUCE_RULES[(np.add, "accumulate")] = lambda a, axis=0: cumsum(a, axis)
REDUCE_RULES[(np.multiply, "accumulate")] = lambda a, axis=0: cumprod(a, axis)


def _outer_rule(ufunc):
    def outer_(a, b):
        a = operand_or_raise(a)
        b = operand_or_raise(b)
        return UFUNC_RULES[ufunc](reshape(a, shape_of(a) + (1,) * _ndim(b)), b)

    return outer_


for _u in (np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum, np.arctan2, np.hypot, np.logaddexp):
    REDUCE_RULES[(_u, "outer")] = _outer_rule(_u)
