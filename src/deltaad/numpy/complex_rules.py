"""Complex rules: every numpy ufunc defined on complex numbers, Python's operators on complex
values, and the numpy functions users apply to complex arrays (shape, indexing, sums, products,
``angle``, ``real_if_close``...), as complex primitives (:mod:`.complex_array`).

Values are numpy's (or Python's, for the operators on Python ``complex``) own complex results on
the plain values. The derivatives of the holomorphic functions are written once, in the table
:data:`HOLOMORPHIC`, as ``f'(z)`` over numpy's functions (so they differentiate again, to any
order); ``deltaad.cmath`` uses the same table with ``cmath``'s values. With the internal
conventions of :mod:`.complex_array`, a holomorphic ``f`` pushes a tangent ``t`` to ``t f'(z)`` and
pulls a cotangent ``c`` back to ``c conj(f'(z))``; a real operand receives the real part.

Choices where a function is not differentiable (also in the documentation's table):
``abs`` and ``sign`` have derivative 0 at 0; ``angle`` is nan at 0 (as ``arctan2`` at the
origin); ``maximum``/``minimum``/``fmax``/``fmin`` (numpy's lexicographic order on complex) give
each argument 1/2 at a tie; ``z ** w`` has derivative 0 in ``w`` where ``z`` is 0 and 0 in ``z``
where ``w`` is 0; on a branch cut (``log``, ``sqrt``, ``arcsin``...) the derivative is the
formula's value with the signed zero the value used. Values that only move elements (reshape,
transpose, concatenate, ...) act on the real and imaginary parts separately, which is exact.
"""

from deltaad._plainmath import cmath
import inspect
from deltaad._plainmath import math
import operator

from deltaad._plainnumpy import np

from .. import elementwise as table
from ..trace import value as strip
from . import registry
from .args import axes_of, expand_shape, normalize_axis_index, normalize_axis_tuple
from .array import ArrayDual, Dual, reshape, shape_of, unbroadcast
from .complex_array import (
    FUNCTIONS, METHODS, NOTES, OPS, PYOPS, UFUNCS, CONSTANT_UFUNCS, ComplexDual, capply, cgetitem,
    cprimitive, function, is_plain_complex, pack, pair, real_dtype,
)
from .complex_decomp import JvpCPrimitive
from .library import numpy_valued as _numpy_valued
from .elementwise import _choice_weights
from .products import EINSUM, _einsum_grad, _parse_einsum
from .reductions import CUMSUM, SUM

LN2 = table.LN2
LN10 = table.LN10


# ============================================================================================
# Exact zeros: a zero tangent or cotangent meeting an infinite partial contributes 0


def _nonfinite(d):
    v = strip(d)
    if isinstance(v, (float, complex)):
        return not cmath.isfinite(v)
    return not np.isfinite(np.asarray(v)).all()


def _zero(t):
    """Where the (co)tangent ``t`` is an exact zero (a tape dual never is)."""
    tt = type(t)
    if tt is ComplexDual or tt is ArrayDual or tt is Dual:
        if not t.trace.is_forward:
            return False
        return _zero(t.value) & _zero(t.tangent)
    return np.asarray(t) == 0


def times(t, d):
    """``t * d`` for a (co)tangent ``t`` and a partial ``d``, 0 where ``t`` is 0 even if ``d`` is
    infinite or nan there (a zero vector maps to zero)."""
    if not _nonfinite(d):
        return t * d
    with np.errstate(invalid="ignore", over="ignore"):
        r = t * d
    m = _zero(t)
    if m is False or not np.any(m):
        return r
    return np.where(m, 0.0, r)


# ============================================================================================
# Holomorphic functions of one complex number: the table


class Holomorphic:
    """One holomorphic function: numpy's ufunc, its ``cmath`` name, ``f'(z)`` as
    ``derivative(z, w)`` (``w = f(z)``) written with numpy's functions, and a note."""

    __slots__ = ("name", "ufunc", "cmath", "derivative", "note")

    def __init__(self, name, ufunc, cmath_name, derivative, note=""):
        self.name = name
        self.ufunc = ufunc
        self.cmath = cmath_name
        self.derivative = derivative
        self.note = note


def _inv(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / x


CUT = "on its branch cuts, the derivative of the side the value is taken from"

HOLOMORPHIC = [
    Holomorphic("exp", np.exp, "exp", lambda z, w: w),
    Holomorphic("exp2", np.exp2, None, lambda z, w: w * LN2),
    Holomorphic("expm1", np.expm1, None, lambda z, w: w + 1.0),
    Holomorphic("log", np.log, "log", lambda z, w: _inv(z), "inf at 0; " + CUT),
    Holomorphic("log2", np.log2, None, lambda z, w: _inv(z * LN2), "inf at 0; " + CUT),
    Holomorphic("log10", np.log10, "log10", lambda z, w: _inv(z * LN10), "inf at 0; " + CUT),
    Holomorphic("log1p", np.log1p, None, lambda z, w: _inv(1.0 + z), "inf at -1; " + CUT),
    Holomorphic("sqrt", np.sqrt, "sqrt", lambda z, w: _inv(2.0 * w), "inf at 0; " + CUT),
    Holomorphic("square", np.square, None, lambda z, w: 2.0 * z),
    Holomorphic("reciprocal", np.reciprocal, None, lambda z, w: -(w * w), "inf at 0"),
    Holomorphic("sin", np.sin, "sin", lambda z, w: np.cos(z)),
    Holomorphic("cos", np.cos, "cos", lambda z, w: -np.sin(z)),
    Holomorphic("tan", np.tan, "tan", lambda z, w: 1.0 + w * w),
    Holomorphic("arcsin", np.arcsin, "asin", lambda z, w: _inv(np.sqrt(1.0 - z * z)),
                "inf at -1 and 1; " + CUT),
    Holomorphic("arccos", np.arccos, "acos", lambda z, w: -_inv(np.sqrt(1.0 - z * z)),
                "inf at -1 and 1; " + CUT),
    Holomorphic("arctan", np.arctan, "atan", lambda z, w: _inv(1.0 + z * z),
                "inf at -i and i; " + CUT),
    Holomorphic("sinh", np.sinh, "sinh", lambda z, w: np.cosh(z)),
    Holomorphic("cosh", np.cosh, "cosh", lambda z, w: np.sinh(z)),
    Holomorphic("tanh", np.tanh, "tanh", lambda z, w: 1.0 - w * w),
    Holomorphic("arcsinh", np.arcsinh, "asinh", lambda z, w: _inv(np.sqrt(z * z + 1.0)),
                "inf at -i and i; " + CUT),
    Holomorphic("arccosh", np.arccosh, "acosh",
                lambda z, w: _inv(np.sqrt(z - 1.0) * np.sqrt(z + 1.0)),
                "inf at -1 and 1; " + CUT),
    Holomorphic("arctanh", np.arctanh, "atanh", lambda z, w: _inv(1.0 - z * z),
                "inf at -1 and 1; " + CUT),
]

BY_NAME = {h.name: h for h in HOLOMORPHIC}


def holomorphic_primitive(name, impl, derivative):
    """The complex primitive of a holomorphic ``impl`` with ``f'(z) = derivative(z, w)``."""

    # (a real operand is a point of the complex plane: its derivative is the complex one,
    # e.g. arccosh'(0.5) on the branch cut, not a real function's nan)
    def vjp(out, vals, on):
        d = np.conj(derivative(_complex(vals[0]), out))

        def rule(c):
            return (times(c, d),)

        return rule

    def jvp(out, vals, tans):
        return times(tans[0], derivative(_complex(vals[0]), out))

    return cprimitive(name, impl, vjp, jvp)


def _unary(prim):
    def fn(x):
        return capply(prim, (x,))

    fn.__name__ = prim.name
    fn.primitive = prim
    return fn


for _h in HOLOMORPHIC:
    UFUNCS[_h.ufunc] = _unary(holomorphic_primitive(_h.name, _h.ufunc, _h.derivative))
    if _h.note:
        NOTES[_h.ufunc] = _h.note


# ============================================================================================
# Linear and non-holomorphic functions of one complex number


def _neg_vjp(out, vals, on):
    return lambda c: (-c,)


NEGATIVE = cprimitive("negative", np.negative, _neg_vjp, lambda out, vals, tans: -tans[0])
NEG_OP = cprimitive("-", operator.neg, _neg_vjp, lambda out, vals, tans: -tans[0])


def _conj_vjp(out, vals, on):
    return lambda c: (np.conj(c),)


def _conj_impl(x):
    return np.conjugate(x)


CONJUGATE = cprimitive("conjugate", _conj_impl, _conj_vjp, lambda out, vals, tans: np.conj(tans[0]))
CONJ_METHOD = cprimitive("conjugate", lambda x: x.conjugate(), _conj_vjp,
                         lambda out, vals, tans: np.conj(tans[0]))


def _safe_div(a, r):
    """``a / r`` for the modulus ``r`` (a real value or dual), 0 where ``r`` is 0."""
    rv = np.asarray(strip(r))
    if not (rv == 0).any():
        with np.errstate(invalid="ignore", divide="ignore"):
            return a / r
    zero = rv == 0
    rs = np.where(zero, 1.0, r) if zero.shape else (1.0 if zero else r)
    return np.where(zero, 0.0, a / rs)


def _abs_vjp(out, vals, on):
    u = _safe_div(vals[0], out)  # z / |z|, 0 at 0

    def rule(g):
        return (g * u,)

    return rule


def _abs_jvp(out, vals, tans):
    return np.real(np.conj(_safe_div(vals[0], out)) * tans[0])


ABSOLUTE = cprimitive("absolute", np.absolute, _abs_vjp, _abs_jvp, real_out=True)
ABS_OP = cprimitive("abs", abs, _abs_vjp, _abs_jvp, real_out=True)


def _sign_rule(out, vals):
    """d(z/|z|) = (dz - s Re(conj(s) dz)) / |z|: self-adjoint; 0 at 0."""
    z = vals[0]
    r = np.abs(z)
    s = out

    def apply_(t):
        return _safe_div(t - s * np.real(np.conj(s) * t), r)

    return apply_


def _sign_vjp(out, vals, on):
    f = _sign_rule(out, vals)
    return lambda c: (f(c),)


SIGN = cprimitive("sign", np.sign, _sign_vjp, lambda out, vals, tans: _sign_rule(out, vals)(tans[0]))
NOTES[np.absolute] = "0 at 0 (a subgradient)"
NOTES[np.sign] = "z / |z|, derivative 0 at 0"


def _angle_weights(z):
    """i z / |z|^2: the complex cotangent of angle(z) per unit; nan at 0 (as arctan2)."""
    r2 = np.real(z * np.conj(z))
    return 1j * z / r2


def _angle_vjp(out, vals, on, deg=False):
    with np.errstate(divide="ignore", invalid="ignore"):
        w = _angle_weights(vals[0])
    k = 180.0 / math.pi if deg else 1.0

    def rule(g):
        return (g * w * k if deg else g * w,)

    return rule


def _angle_jvp(out, vals, tans, deg=False):
    with np.errstate(divide="ignore", invalid="ignore"):
        w = _angle_weights(vals[0])
    t = np.real(np.conj(w) * tans[0])
    return t * (180.0 / math.pi) if deg else t


ANGLE = cprimitive("angle", lambda z, deg=False: np.angle(z, deg=deg), _angle_vjp, _angle_jvp,
                   real_out=True)
PHASE = cprimitive("phase", cmath.phase, _angle_vjp, _angle_jvp, real_out=True)


UFUNCS[np.negative] = _unary(NEGATIVE)
UFUNCS[np.positive] = lambda x: x if type(x) is ComplexDual else np.positive(x)
UFUNCS[np.conjugate] = _unary(CONJUGATE)
UFUNCS[np.absolute] = _unary(ABSOLUTE)
UFUNCS[np.sign] = _unary(SIGN)
OPS["neg"] = _unary(NEG_OP)
OPS["abs"] = _unary(ABS_OP)
OPS["conjugate"] = _unary(CONJ_METHOD)


# ============================================================================================
# Arithmetic: Python's operators and numpy's ufuncs, with broadcasting


def _shapes(vals):
    return [shape_of(v) for v in vals]


def _add_vjp(out, vals, on, sign=1.0):
    sa, sb = _shapes(vals)

    def rule(c):
        return (unbroadcast(c, sa) if on[0] else None,
                (unbroadcast(c, sb) if sign > 0 else -unbroadcast(c, sb)) if on[1] else None)

    return rule


def _add_jvp(out, vals, tans, sign=1.0):
    ta, tb = tans
    s = shape_of(out)
    if tb is None:
        t = ta
    elif ta is None:
        t = tb if sign > 0 else -tb
    else:
        t = ta + tb if sign > 0 else ta - tb
    return _broadcast(t, s)


def _broadcast(t, s):
    if shape_of(t) == s:
        return t
    return np.broadcast_to(t, s) if type(t) is not ComplexDual else function(np.broadcast_to, (t, s), {})


def _sub_vjp(out, vals, on):
    return _add_vjp(out, vals, on, -1.0)


def _sub_jvp(out, vals, tans):
    return _add_jvp(out, vals, tans, -1.0)


def _mul_vjp(out, vals, on):
    a, b = vals
    sa, sb = _shapes(vals)
    ca = np.conj(a) if on[1] else None
    cb = np.conj(b) if on[0] else None

    def rule(c):
        return (unbroadcast(times(c, cb), sa) if on[0] else None,
                unbroadcast(times(c, ca), sb) if on[1] else None)

    return rule


def _mul_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    t = None
    if ta is not None:
        t = times(ta, b)
    if tb is not None:
        u = times(tb, a)
        t = u if t is None else t + u
    return _broadcast(t, shape_of(out))


def _div_vjp(out, vals, on):
    a, b = vals
    sa, sb = _shapes(vals)
    with np.errstate(divide="ignore", invalid="ignore"):
        ib = np.conj(_inv(b))
        q = np.conj(out) * ib if on[1] else None

    def rule(c):
        return (unbroadcast(times(c, ib), sa) if on[0] else None,
                -unbroadcast(times(c, q), sb) if on[1] else None)

    return rule


def _div_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    with np.errstate(divide="ignore", invalid="ignore"):
        ib = _inv(b)
        t = None
        if ta is not None:
            t = times(ta, ib)
        if tb is not None:
            u = times(tb, out * ib)
            t = -u if t is None else t - u
    return _broadcast(t, shape_of(out))


def _pow_partials(a, b, w, on):
    """``(d/da, d/db)`` of ``a ** b``: ``b a**(b-1)`` (0 where ``b`` is 0: ``a**0`` is 1
    everywhere) and ``log(a) w`` (0 where ``a`` is 0)."""
    da = db = None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if on[0]:
            bz = np.asarray(strip(b)) == 0
            if bz.all():
                da = 0.0
            elif bz.any():
                da = np.where(bz, 0.0, b * np.power(a, np.where(bz, 1.0, b - 1.0)))
            else:
                da = b * np.power(a, b - 1.0)
        if on[1]:
            az = np.asarray(strip(a)) == 0
            if az.all():
                db = 0.0
            elif az.any():
                db = np.where(az, 0.0, np.log(_complex(np.where(az, 1.0, a))) * w)
            else:
                db = np.log(_complex(a)) * w
    return da, db


def _complex(x):
    """``x`` as a complex value (the logarithm of a negative real base is complex here)."""
    if type(x) is ComplexDual or is_plain_complex(x):
        return x
    return x + 0j


def _pow_vjp(out, vals, on):
    a, b = vals
    sa, sb = _shapes(vals)
    da, db = _pow_partials(a, b, out, on)
    cda = None if da is None else np.conj(da)
    cdb = None if db is None else np.conj(db)

    def rule(c):
        return (unbroadcast(times(c, cda), sa) if on[0] else None,
                unbroadcast(times(c, cdb), sb) if on[1] else None)

    return rule


def _pow_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    da, db = _pow_partials(a, b, out, (ta is not None, tb is not None))
    t = None
    if ta is not None:
        t = times(ta, da)
    if tb is not None:
        u = times(tb, db)
        t = u if t is None else t + u
    return _broadcast(t, shape_of(out))


_ARITH = {
    "add": (_add_vjp, _add_jvp, np.add),
    "sub": (_sub_vjp, _sub_jvp, np.subtract),
    "mul": (_mul_vjp, _mul_jvp, np.multiply),
    "truediv": (_div_vjp, _div_jvp, np.true_divide),
    "pow": (_pow_vjp, _pow_jvp, np.power),
}


def _binary(prim):
    def fn(a, b):
        return capply(prim, (a, b))

    fn.__name__ = prim.name
    fn.primitive = prim
    return fn


for _op, (_vjp, _jvp, _uf) in _ARITH.items():
    OPS[_op] = _binary(cprimitive(_op, PYOPS[_op], _vjp, _jvp))
    UFUNCS[_uf] = _binary(cprimitive(_uf.__name__, _uf, _vjp, _jvp))
UFUNCS[np.float_power] = _binary(cprimitive("float_power", np.float_power, _pow_vjp, _pow_jvp))
for _op in ("floordiv", "mod"):  # Python and numpy refuse these on complex numbers: so do we
    OPS[_op] = _binary(cprimitive(_op, PYOPS[_op], None, None))
NOTES[np.power] = "0 in the exponent where the base is 0; 0 in the base where the exponent is 0"
NOTES[np.float_power] = NOTES[np.power]


# ============================================================================================
# Choices: numpy's lexicographic maximum/minimum on complex numbers


def _choice(name, f, greater, ignore_nan):
    def weights(a, b, out, on):
        return _choice_weights(a, b, out, on, greater, ignore_nan)

    def vjp(out, vals, on):
        wa, wb = weights(vals[0], vals[1], out, on)
        sa, sb = _shapes(vals)

        def rule(c):
            return (unbroadcast(c * wa, sa) if on[0] else None,
                    unbroadcast(c * wb, sb) if on[1] else None)

        return rule

    def jvp(out, vals, tans):
        wa, wb = weights(vals[0], vals[1], out, (True, True))
        t = None
        for tk, wk in zip(tans, (wa, wb)):
            if tk is not None:
                u = tk * wk
                t = u if t is None else t + u
        return _broadcast(t, shape_of(out))

    return _binary(cprimitive(name, f, vjp, jvp))


_TIE = "1/2 to each argument at a tie (numpy's lexicographic order); "
for _uf, _g, _nan in ((np.maximum, np.greater, False), (np.minimum, np.less, False),
                      (np.fmax, np.greater, True), (np.fmin, np.less, True)):
    UFUNCS[_uf] = _choice(_uf.__name__, _uf, _g, _nan)
    NOTES[_uf] = _TIE + ("a nan argument is ignored" if _nan else "a nan argument is the result")

# Piecewise constant on complex numbers: computed on plain values.
CONSTANT_UFUNCS.update([
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal, np.isfinite,
    np.isinf, np.isnan, np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.rint,
])


# ============================================================================================
# Products: values from numpy's own function, derivatives as einsums (``conj`` marks the
# operands numpy conjugates: vdot's, vecdot's and vecmat's first)


def _letters(n, start=0):
    return "".join(chr(ord("a") + start + i) for i in range(n))


def _bilinear(name, impl, spec_of, conj_first=False):
    """A product of two operands whose value is ``impl(a, b, **params)`` and which, as a map
    of ``(conj(a) if conj_first else a, b)``, is the einsum ``spec_of(shape_a, shape_b,
    **params)`` (with broadcasting of size-1 dimensions)."""

    def terms(vals, params):
        spec = spec_of(shape_of(vals[0]), shape_of(vals[1]), **params)
        ins, o = spec.split("->")
        return spec, ins.split(","), o

    def vjp(out, vals, on, **params):
        spec, ts, o = terms(vals, params)
        a, b = vals
        ca = a if conj_first else np.conj(a)  # the other operand, conjugated, in each adjoint
        cb = np.conj(b) if on[0] else None

        def rule(c):
            ga = gb = None
            if on[0]:
                ga = _einsum_grad(0, c, ts, o, [a, cb], False)  # (a only for its shape)
                if conj_first:
                    ga = np.conj(ga)
            if on[1]:
                gb = _einsum_grad(1, c, ts, o, [ca, b], False)
            return ga, gb

        return rule

    def jvp(out, vals, tans, **params):
        spec, ts, o = terms(vals, params)
        a, b = vals
        ta, tb = tans
        fa = np.conj(a) if conj_first else a
        t = None
        if ta is not None:
            t = np.einsum(spec, np.conj(ta) if conj_first else ta, b)
        if tb is not None:
            u = np.einsum(spec, fa, tb)
            t = u if t is None else t + u
        return t

    return cprimitive(name, impl, vjp, jvp)


def _matmul_spec(sa, sb):
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if na == 1 and nb == 1:
        return "z,z->"
    batch = max(na, nb) - 2
    B = _letters(batch, 3)
    if na == 1:
        return "y,%syx->%sx" % (B[batch - (nb - 2):], B[batch - (nb - 2):])
    if nb == 1:
        return "%sxy,y->%sx" % (B[batch - (na - 2):], B[batch - (na - 2):])
    ba, bb = B[batch - (na - 2):], B[batch - (nb - 2):]
    return "%sxy,%syw->%sxw" % (ba, bb, B)


def _dot_spec(sa, sb):
    na, nb = len(sa), len(sb)
    la = _letters(na)
    lb = list(_letters(nb, na))
    k = la[-1]
    lb[0 if nb == 1 else -2] = k
    lb = "".join(lb)
    return "%s,%s->%s" % (la, lb, la[:-1] + lb.replace(k, ""))


def _inner_spec(sa, sb):
    na, nb = len(sa), len(sb)
    la = _letters(na)
    lb = _letters(nb - 1, na) + la[-1]
    return "%s,%s->%s" % (la, lb, la[:-1] + lb[:-1])


def _tensordot_spec(sa, sb, axes=2):
    na, nb = len(sa), len(sb)
    if isinstance(axes, (int, np.integer)):
        axes_a, axes_b = list(range(na - axes, na)), list(range(int(axes)))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    axes_a = [normalize_axis_index(int(i), na) for i in axes_a]
    axes_b = [normalize_axis_index(int(i), nb) for i in axes_b]
    la = list(_letters(na))
    lb = list(_letters(nb, na))
    for i, j in zip(axes_a, axes_b):
        lb[j] = la[i]
    out = [c for i, c in enumerate(la) if i not in axes_a] + \
        [c for j, c in enumerate(lb) if j not in axes_b]
    return "%s,%s->%s" % ("".join(la), "".join(lb), "".join(out))


def _vecdot_spec(sa, sb, axis=-1):
    n = max(len(sa), len(sb))
    ax = normalize_axis_index(axis, n)
    L = _letters(n)
    la, lb = L[n - len(sa):], L[n - len(sb):]
    return "%s,%s->%s" % (la, lb, L[:ax] + L[ax + 1:])


def _matvec_spec(sa, sb):
    batch = max(len(sa) - 2, len(sb) - 1)
    B = _letters(batch, 3)
    return "%sxy,%sy->%sx" % (B[batch - (len(sa) - 2):], B[batch - (len(sb) - 1):], B)


def _vecmat_spec(sa, sb):
    batch = max(len(sa) - 1, len(sb) - 2)
    B = _letters(batch, 3)
    return "%sy,%syx->%sx" % (B[batch - (len(sa) - 1):], B[batch - (len(sb) - 2):], B)


MATMUL = _bilinear("matmul", np.matmul, _matmul_spec)
MATMUL_OP = _bilinear("@", operator.matmul, _matmul_spec)
DOT = _bilinear("dot", lambda a, b: np.dot(a, b), _dot_spec)
INNER = _bilinear("inner", np.inner, _inner_spec)
TENSORDOT = _bilinear("tensordot", lambda a, b, axes=2: np.tensordot(a, b, axes), _tensordot_spec)
VDOT = _bilinear("vdot", np.vdot, lambda sa, sb: "a,a->", conj_first=True)

UFUNCS[np.matmul] = _binary(MATMUL)
OPS["matmul"] = _binary(MATMUL_OP)
if hasattr(np, "vecdot"):
    VECDOT = _bilinear("vecdot", lambda a, b, axis=-1: np.vecdot(a, b, axis=axis), _vecdot_spec,
                       conj_first=True)
    UFUNCS[np.vecdot] = lambda a, b, axis=-1: capply(VECDOT, (a, b), {"axis": axis})
if hasattr(np, "matvec"):
    UFUNCS[np.matvec] = _binary(_bilinear("matvec", np.matvec, _matvec_spec))
    UFUNCS[np.vecmat] = _binary(_bilinear("vecmat", np.vecmat, _vecmat_spec, conj_first=True))


def _einsum_vjp(out, vals, on, spec, optimize):
    return EINSUM.vjp(out, [np.conj(v) for v in vals], on, spec=spec, optimize=optimize)


COMPLEX_EINSUM = cprimitive(
    "einsum", lambda *vals, spec, optimize: np.einsum(spec, *vals, optimize=optimize),
    _einsum_vjp, lambda out, vals, tans, spec, optimize: EINSUM.jvp(out, vals, tans, spec=spec,
                                                                     optimize=optimize))


# ============================================================================================
# numpy functions


def register(*funcs, note=""):
    """Decorator: ``impl`` implements ``funcs`` where an argument is complex."""

    def deco(impl):
        for f in funcs:
            if f is not None:
                FUNCTIONS[f] = impl
                if note:
                    NOTES[f] = note
        return impl

    return deco


def _np_fn(name, module=np):
    return getattr(module, name, None)


@register(np.real)
def real(val):
    if type(val) is ComplexDual:
        return val.real
    return np.real(val)


@register(np.imag)
def imag(val):
    if type(val) is ComplexDual:
        return val.imag
    return np.imag(val)


@register(np.angle, note="nan at 0 (as arctan2 at the origin)")
def angle(z, deg=False):
    if type(z) is ComplexDual or is_plain_complex(z):
        return capply(ANGLE, (z,), {"deg": bool(deg)})
    return np.angle(strip(z), deg=deg)  # of a real number: 0 or pi, derivative 0


@register(np.real_if_close, note="the real part when every imaginary part is within tol "
                                 "machine epsilons of 0 (the branch the value takes)")
def real_if_close(a, tol=100):
    if type(a) is not ComplexDual:
        return np.real_if_close(a, tol)
    tol_ = tol * np.finfo(a.dtype).eps if tol > 1 else tol
    if np.all(np.absolute(strip(a).imag) < tol_):
        return a.real
    return a


@register(np.iscomplexobj)
def iscomplexobj(x):
    return type(x) is ComplexDual or np.iscomplexobj(strip(x))


@register(np.isrealobj)
def isrealobj(x):
    return not iscomplexobj(x)


@register(np.iscomplex)
def iscomplex(x):
    return np.iscomplex(strip(x))


@register(np.isreal)
def isreal(x):
    return np.isreal(strip(x))


@register(np.shape)
def _shape(a):
    return np.shape(strip(a))


@register(np.ndim)
def _ndim(a):
    return np.ndim(strip(a))


@register(np.size)
def _size(a, axis=None):
    return np.size(strip(a), axis)


def _real_astype(x, dt):
    return registry.FUNCTIONS[np.astype](x, dt) if type(x) is ArrayDual else x


@register(_np_fn("astype"))
def astype(x, dtype, /, *, copy=True, **kw):
    """A complex dual cast to another complex dtype, or to a real one (numpy keeps the real
    part); a real dual cast to a complex dtype (imaginary part 0)."""
    dt = np.dtype(dtype)
    if type(x) is not ComplexDual:
        if dt.kind != "c":
            return registry.FUNCTIONS[np.astype](x, dt)
        rdt = real_dtype(dt)
        re = _real_astype(x, rdt)
        return pair(re, 0.0 if type(x) is Dual else np.zeros(shape_of(x), dtype=rdt))
    if dt.kind == "c":
        if dt == x.dtype:
            return x
        rdt = real_dtype(dt)
        return pair(_real_astype(x.real, rdt), _real_astype(x.imag, rdt))
    if dt.kind == "f":  # numpy keeps the real part (and warns)
        return _real_astype(x.real, dt)
    raise TypeError("deltaad: astype(%s) of a complex dual would drop its derivative" % dt)


# -- reductions: numpy's complex sums, linear rules --

def _axes(z, axis):
    return axes_of(axis, len(shape_of(z)))


def _sum_like(name, impl):
    def vjp(out, vals, on, axis, keepdims, n=1):
        rule = SUM.vjp(out, vals, on, axis=axis, keepdims=keepdims)
        if n == 1:
            return rule
        return lambda c: rule(c / n)

    def jvp(out, vals, tans, axis, keepdims, n=1):
        return impl(tans[0], axis=axis, keepdims=keepdims)

    return cprimitive(name, lambda v, axis, keepdims, n=1: impl(v, axis=axis, keepdims=keepdims),
                      vjp, jvp)


CSUM = _sum_like("sum", np.sum)
CMEAN = _sum_like("mean", np.mean)


@register(np.sum)
def sum_(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _no_out("sum", out)
    r = capply(CSUM, (a,), {"axis": _axes(a, axis), "keepdims": bool(keepdims)})
    return r if dtype is None else astype(r, dtype)


@register(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _no_out("mean", out)
    axes = _axes(a, axis)
    s = shape_of(a)
    n = int(np.prod([s[i] for i in axes], dtype=np.int64))
    r = capply(CMEAN, (a,), {"axis": axes, "keepdims": bool(keepdims), "n": n})
    return r if dtype is None else astype(r, dtype)


def _moment(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    """numpy's variance of complex values, step by step as numpy computes it (so the value is
    numpy's): the complex mean, the deviations, their squared moduli re**2 + im**2 summed."""
    _no_out(name, out)
    if where is not True or mean is not None:
        raise NotImplementedError("deltaad: numpy.%s(..., where=/mean=) on complex duals" % name)
    if correction is not None:
        ddof = correction
    axes = _axes(a, axis)
    s = shape_of(a)
    n = int(np.prod([s[i] for i in axes], dtype=np.int64))
    m = sum_(a, axis=axes, keepdims=True) / n
    x = a - m
    sq = x.real * x.real + x.imag * x.imag
    return registry.FUNCTIONS[np.sum](sq, axis=axes, keepdims=keepdims) / max(n - ddof, 0)


@register(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    r = _moment("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return r if dtype is None else astype(r, dtype)


@register(np.std, note="0 where the spread is 0 (as for real values)")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    v = _moment("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    zero = np.asarray(strip(v)) == 0
    r = np.sqrt(np.where(zero, 1.0, v) if zero.any() else v)  # sqrt(0) = 0: the value is kept
    r = np.where(zero, 0.0, r) if zero.any() else r
    return r if dtype is None else astype(r, dtype)


@register(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out("trace", out)
    return sum_(function(np.diagonal, (a, offset, axis1, axis2), {}), axis=-1, dtype=dtype)


if hasattr(np.linalg, "trace"):
    register(np.linalg.trace)(lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype))


def _outer(ufunc):
    def outer_(a, b, **kw):
        _no_out(ufunc.__name__ + ".outer", kw.get("out"))
        sa, sb = shape_of(a), shape_of(b)
        return UFUNCS[ufunc](function(np.reshape, (a, sa + (1,) * len(sb)), {}), b)

    return outer_


for _uf in (np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.minimum):
    METHODS[(_uf, "outer")] = _outer(_uf)
METHODS[(np.add, "reduce")] = lambda a, axis=0, dtype=None, out=None, keepdims=False: \
    sum_(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
METHODS[(np.add, "accumulate")] = lambda a, axis=0, dtype=None, out=None: \
    function(np.cumsum, (a,), {"axis": axis, "dtype": dtype, "out": out})


def _no_out(name, out):
    if out is not None:
        raise TypeError("numpy.%s(..., out=...) would write duals into an array in place; use "
                        "the returned value" % name)


# -- products --

def _nd(x):
    return len(shape_of(x))


@register(np.dot)
def dot(a, b, out=None):
    _no_out("dot", out)
    if _nd(a) == 0 or _nd(b) == 0:
        return UFUNCS[np.multiply](a, b)
    return capply(DOT, (a, b))


@register(np.vdot)
def vdot(a, b):
    return capply(VDOT, (function(np.ravel, (a,), {}), function(np.ravel, (b,), {})))


@register(np.inner)
def inner(a, b):
    if _nd(a) == 0 or _nd(b) == 0:
        return UFUNCS[np.multiply](a, b)
    return capply(INNER, (a, b))


@register(np.outer)
def outer(a, b, out=None):
    _no_out("outer", out)
    ra = function(np.reshape, (function(np.ravel, (a,), {}), (-1, 1)), {})
    rb = function(np.reshape, (function(np.ravel, (b,), {}), (1, -1)), {})
    return UFUNCS[np.multiply](ra, rb)


@register(np.tensordot)
def tensordot(a, b, axes=2):
    return capply(TENSORDOT, (a, b), {"axes": axes if isinstance(axes, (int, np.integer))
                                      else tuple(tuple(x) if isinstance(x, (list, tuple)) else x
                                                 for x in axes)})


@register(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    _no_out("einsum", out)
    if isinstance(operands[0], str):
        arrays = list(operands[1:])
        placeholders = [np.broadcast_to(0.0, shape_of(x)) for x in arrays]
        terms, o, _ = _parse_einsum((operands[0],) + tuple(placeholders))
    else:
        arrays = list(operands[0::2])
        subs = list(operands[1::2])
        if len(arrays) > len(subs):
            arrays, last = arrays[:-1], arrays[-1]
            subs.append(last)
        placeholders = [np.broadcast_to(0.0, shape_of(x)) for x in arrays]
        inter = []
        for p, s in zip(placeholders, subs):
            inter += [p, s]
        if len(subs) > len(arrays):
            inter.append(subs[-1])
        terms, o, _ = _parse_einsum(tuple(inter))
    if not isinstance(optimize, (bool, str)):
        optimize = True
    return capply(COMPLEX_EINSUM, arrays, {"spec": ",".join(terms) + "->" + o,
                                           "optimize": optimize})


# -- data movement: the real and imaginary parts separately (exact) --

def _split(x, part):
    """Part ``part`` (0 real, 1 imaginary) of a data argument."""
    tx = type(x)
    if tx is ComplexDual:
        return x.real if part == 0 else x.imag
    if tx is list or tx is tuple:
        return tx(_split(e, part) for e in x)
    if is_plain_complex(x):
        return np.real(x) if part == 0 else np.imag(x)
    if part == 0:
        return x
    if tx is ArrayDual or tx is Dual:
        v = strip(x)
        return np.zeros(np.shape(v), dtype=getattr(v, "dtype", np.float64)) if tx is ArrayDual else 0.0
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if isinstance(x, (int, float, np.generic)) and not isinstance(x, (bool, np.bool_)):
        return type(x)(0)
    return x


def _combine(r, i):
    if type(r) is list or type(r) is tuple:
        return type(r)(_combine(a, b) for a, b in zip(r, i))
    return pair(r, i)


def componentwise(func, data, sig=None):
    """``func`` on complex data as ``func(re) + i func(im)`` with the real rule: exact for
    functions that only move, copy, select or add elements one by one. ``data`` names the
    parameters that hold data (the others -- axes, shapes, indices -- are passed unchanged);
    ``sig`` is a Python function with ``func``'s signature where ``func`` has none."""
    sig = inspect.signature(sig or func)

    var_kw = next((p.name for p in sig.parameters.values() if p.kind == p.VAR_KEYWORD), None)

    def impl(*args, **kwargs):
        re = sig.bind(*args, **kwargs)
        im = sig.bind(*args, **kwargs)
        for name in data:
            if name in re.arguments:
                re.arguments[name] = _split(re.arguments[name], 0)
                im.arguments[name] = _split(im.arguments[name], 1)
            elif var_kw in re.arguments and name in re.arguments[var_kw]:
                re.arguments[var_kw] = dict(re.arguments[var_kw])
                im.arguments[var_kw] = dict(im.arguments[var_kw])
                re.arguments[var_kw][name] = _split(re.arguments[var_kw][name], 0)
                im.arguments[var_kw][name] = _split(im.arguments[var_kw][name], 1)
        f = registry.FUNCTIONS.get(func, func)
        return _combine(f(*re.args, **re.kwargs), f(*im.args, **im.kwargs))

    impl.__name__ = getattr(func, "__name__", "componentwise")
    return impl


_COMPONENTWISE = {
    "transpose": ("a",), "swapaxes": ("a",), "moveaxis": ("a",), "ravel": ("a",),
    "expand_dims": ("a",), "squeeze": ("a",), "atleast_1d": ("arys",), "atleast_2d": ("arys",),
    "atleast_3d": ("arys",), "broadcast_to": ("array",), "broadcast_arrays": ("args",),
    "concatenate": ("arrays",), "stack": ("arrays",), "vstack": ("tup",), "hstack": ("tup",),
    "dstack": ("tup",), "column_stack": ("tup",), "append": ("arr", "values"),
    "split": ("ary",), "array_split": ("ary",), "hsplit": ("ary",), "vsplit": ("ary",),
    "dsplit": ("ary",), "flip": ("m",), "fliplr": ("m",), "flipud": ("m",), "roll": ("a",),
    "tile": ("A",), "repeat": ("a",), "diag": ("v",), "diagonal": ("a",), "tril": ("m",),
    "triu": ("m",), "take": ("a",), "take_along_axis": ("arr",), "diff": ("a", "prepend", "append"),
    "cumsum": ("a",), "where": ("x", "y"), "select": ("choicelist", "default"),
    "full_like": ("a", "fill_value"), "copy": ("a",), "matrix_transpose": ("x",),
    "permute_dims": ("a",), "concat": ("arrays",), "unstack": ("x",),
    "insert": ("arr", "values"), "delete": ("arr",), "block": ("arrays",),
}


def _register_componentwise():
    for name, data in _COMPONENTWISE.items():
        f = getattr(np, name, None)
        if f is None or f in FUNCTIONS or f not in registry.FUNCTIONS:
            continue  # (a function without a real rule has no complex one either)
        try:
            FUNCTIONS[f] = componentwise(f, data)
        except (TypeError, ValueError):  # no signature
            continue
    # np.pad: modes that only copy elements (the statistics modes average the parts apart)
    pad_impl = componentwise(np.pad, ("array", "constant_values", "end_values"))

    def pad(array, pad_width, mode="constant", **kwargs):
        if mode not in ("constant", "edge", "wrap", "reflect", "symmetric", "empty"):
            raise NotImplementedError("deltaad: numpy.pad(mode=%r) on complex duals" % (mode,))
        return pad_impl(array, pad_width, mode, **kwargs)

    FUNCTIONS[np.pad] = pad


@register(np.reshape)
def reshape_(a, /, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    if order != "C" or type(a) is not ComplexDual:
        return componentwise(np.reshape, ("a",))(a, shape, order=order)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return ComplexDual(reshape(a.packed, tuple(int(n) for n in shape) + (2,)),
                       a.flavour if shape == () else None)


_register_componentwise()


# -- numpy.gradient: linear in f, with numpy's complex value --------------------------------
# With uneven spacings numpy's complex products round differently from its real ones, so the
# value is numpy's own call on the complex values and only the tangent (linear in f) is
# computed part by part with the real rule; the vjp is its transpose.

_gradient_parts = componentwise(np.gradient, ("f",))


def _gradient_impl(f, spec):
    varargs, axis, edge_order = spec
    r = np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    return np.stack(r) if type(r) in (list, tuple) else r


def _gradient_jvp(out, vals, tans, spec):
    varargs, axis, edge_order = spec
    r = _gradient_parts(tans[0], *varargs, axis=axis, edge_order=edge_order)
    return np.stack(r) if type(r) in (list, tuple) else r


_GRADIENT = JvpCPrimitive("gradient", _gradient_impl, _gradient_jvp)


def gradient(f, *varargs, axis=None, edge_order=1):
    if type(f) is not ComplexDual:
        return registry.FUNCTIONS[np.gradient](f, *varargs, axis=axis, edge_order=edge_order)
    for v in varargs:
        if type(v) is ComplexDual or type(v) in (ArrayDual, Dual):
            raise TypeError("numpy.gradient: a spacing is a dual number; deltaad differentiates "
                            "gradient in f only (pass deltaad.value(...))")
    nd = f.ndim
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    out = capply(_GRADIENT, (f,), {"spec": (varargs, axis, edge_order)})
    if len(axes) == 1:
        return out
    return tuple(out[k] for k in range(len(axes)))


FUNCTIONS[np.gradient] = gradient
NOTES[np.gradient] = "linear in f; the spacings are constants"


# -- interp and linspace: derivatives part by part, values numpy's own ------------------------
# numpy's complex interp and linspace round differently from its real ones (a slope by an
# inverse, a complex product): the rule differentiates the parts with the real rules and the
# result gets numpy's complex value on the plain arguments under every level.


for _f, _data, _note in (
        (np.interp, ("fp", "left", "right"), "in x and fp (as the real rule at the knots); "
                                             "numpy's complex value"),
        (np.linspace, ("start", "stop"), "linear in start and stop; numpy's complex value")):
    FUNCTIONS[_f] = _numpy_valued(_f, componentwise(_f, _data))
    NOTES[_f] = _note
