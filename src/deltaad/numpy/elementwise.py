"""Elementwise rules: the elementary functions of the table on arrays, arithmetic, choices
(``maximum``, ``where``, ``clip``) and casts.

The table's functions (:mod:`deltaad.elementwise`) become array primitives here with the same
derivative expression as on scalars, evaluated over numpy's namespace; a zero tangent or
cotangent meeting an infinite partial contributes an exact zero, as on scalars. On scalar duals
a ufunc gives numpy's value (``np.tanh(x)`` is numpy's ``tanh``, ``deltaad.tanh(x)`` is
``math``'s), with the same derivative expression.

Choices at non-differentiable points (the same as the scalar functions where those exist):
``maximum``/``minimum``/``fmax``/``fmin`` ties give each side 1/2; ``clip`` passes the gradient
to ``x`` inside ``[lo, hi]`` (bounds included) and to the bound outside; ``floor``, ``sign``,
comparisons and friends are constants (derivative zero).
"""

from deltaad._plainmath import math
import operator
from types import SimpleNamespace

from deltaad._plainnumpy import np

from .. import elementwise as table
from .. import functions as F
from .._backend import B
from .._errors import complex_error, escaped_error
from ..trace import dtype_of, is_dual
from ..trace import value as strip
from . import array as _array
from . import registry
from ..trace import recorded_arrays, recorders
from .array import as_ndarray
from .array import (
    ArrayDual, Dual, Primitive, apply, asarray_plain, broadcast, operand_or_raise, reshape,
    shape_of, unbroadcast,
)
from .args import NoValue, no_out, unsupported
from .define import defconst, register


# ============================================================================================
# The table's functions on arrays


def _zero_mask(t):
    """Where the tangent or cotangent ``t`` is an exact zero (a plain 0, or a forward dual whose
    value and tangent are such zeros; a tape dual is never zero: it carries a derivative)."""
    tt = type(t)
    if tt is ArrayDual or tt is Dual:
        if not t.trace.is_forward:
            return False
        return _zero_mask(t.value) & _zero_mask(t.tangent)
    return as_ndarray(t) == 0


def _nonfinite(d):
    """Whether the partial ``d`` is infinite or nan anywhere (one pass: a sum is finite only if
    every entry is; a sum that overflows only errs on the safe side)."""
    v = strip(d)
    if type(v) is float:
        return not math.isfinite(v)
    if type(v) in recorders:  # deltaad.compile's float: a guard on finiteness, not on v
        return (v - v) != 0.0  # (inf - inf and nan - nan are nan, x - x is 0 otherwise)
    s = as_ndarray(v).sum()
    if type(s) in recorded_arrays:  # deltaad.compile: the outcome is its guard, not the sum
        return bool(~np.isfinite(s))
    return not math.isfinite(s)


def _times(t, d, check=True):
    """``t * d`` for a tangent or cotangent ``t`` and a partial ``d``: where ``t`` is an exact
    zero the product is 0 even if ``d`` is infinite or nan there (a zero vector maps to zero,
    as on scalars). Checked when ``check`` and ``d`` is not finite everywhere."""
    if check and _nonfinite(d):
        with np.errstate(invalid="ignore"):  # 0 * inf here is ours, not the user's program's
            r = t * d
        return _zero_where(_zero_mask(t), r)
    return t * d


# The compiled fast path's broadcast arithmetic (``deltaad._arrays.binary``: numpy's bits, or
# None where it does not take the operands), installed by ``fast``; None on the pure backend.
BINARY = None


def _plain_op(code, x, y):
    """``x * y`` (``code`` 2) or ``x / y`` (3) of a rule's plain operands: a broadcast along
    short rows of float64 arrays (a cotangent times a ``q[:, None, :]`` factor) by the fast
    path's loop, where numpy calls its loop once per row; numpy otherwise."""
    if BINARY is not None:
        r = BINARY(code, x, y)
        if r is not None:
            return r
    return x * y if code == _TIMES else x / y


_TIMES, _OVER = 2, 3  # (the fast path's codes of multiply and divide)


def _zero_where(mask, r):
    if mask is False or not np.any(mask):
        return r
    if type(r) is float or type(r) in recorders:
        return 0.0
    return np.where(mask, 0.0, r)


def elementwise_primitive(name, impl, partials, with_out=False, edges=True):
    """An elementwise primitive of n arrays (the paper's general primitive lifted to arrays,
    broadcasting).

    ``partials[j](*values)`` (``(*values, out)`` when ``with_out``) is the elementwise partial
    derivative with respect to argument ``j``, written with numpy functions; it is computed in
    the forward pass (the paper's ``Scale`` coefficient) and only for arguments that are duals.
    With ``edges`` (a partial can be infinite or nan where the value is finite: the edge of a
    domain), zero tangents and cotangents stay exact zeros there. ``deltaad.primitive`` and the table's functions are both
    built here.
    """
    n = len(partials)

    def derivs(vals, out, which):
        args = tuple(vals) + (out,) if with_out else tuple(vals)
        return [partials[j](*args) if which[j] else None for j in range(n)]

    if n == 1:
        d0 = partials[0]

        def vjp1(out, vals, on):
            d = d0(vals[0], out) if with_out else d0(vals[0])
            exact = edges and _nonfinite(d)

            if not exact:
                def rule(ct):
                    return (ct * d,)
            else:
                def rule(ct):
                    return (_times(ct, d),)

            return rule

        def jvp1(out, vals, tans):
            d = d0(vals[0], out) if with_out else d0(vals[0])
            return _times(tans[0], d, edges)

        return Primitive(name, impl, vjp1, jvp1)

    def vjp(out, vals, on):
        ds = derivs(vals, out, on)
        exact = [edges and d is not None and _nonfinite(d) for d in ds]
        shapes = [shape_of(v) for v in vals]

        def rule(ct):
            return tuple(None if d is None else unbroadcast(_times(ct, d, e), s)
                         for d, e, s in zip(ds, exact, shapes))

        return rule

    def jvp(out, vals, tans):
        ds = derivs(vals, out, [t is not None for t in tans])
        t = None
        for tj, d in zip(tans, ds):
            if tj is not None:
                term = _times(tj, d, edges)
                t = term if t is None else t + term
        return broadcast(t, shape_of(out))

    return Primitive(name, impl, vjp, jvp)


def _rdiv(a, b):
    """``ns.rdiv`` on arrays: ``a / b``, and where ``b`` is 0 the sign of ``a`` times inf (nan
    where ``a`` is 0 or nan), exactly as the scalar namespace's ``rdiv``."""
    bv = as_ndarray(strip(b))
    zero = bv == 0
    if not zero.any():
        return a / b
    if type(a) is ArrayDual or type(a) is Dual or type(b) is ArrayDual or type(b) is Dual:
        return apply(_RDIV, (a, b))
    return _rdiv_plain(a, b)


def _rdiv_plain(a, b):
    a = as_ndarray(a)
    b = as_ndarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.true_divide(a, b)
    edge = np.where((a == 0) | np.isnan(a), np.nan, np.copysign(np.inf, a))
    return np.where(b == 0, edge, r)


_RDIV = elementwise_primitive(
    "rdiv", _rdiv_plain,
    (lambda u, v: _rdiv(1.0, v), lambda u, v: -_rdiv(_rdiv(u, v), v)))


def _sign(x):
    return np.sign(as_ndarray(strip(x)))


def _where(c, a, b):
    return np.where(c, a, b)


# The namespace the table's derivative expressions are evaluated over on arrays (the scalar
# one is each backend's ``NS``): numpy's functions dispatch back to deltaad on array duals.
NS = SimpleNamespace(rdiv=_rdiv, sign=_sign, value=lambda x: as_ndarray(strip(x)), where=_where)


def _unary_fn(prim):
    def fn(x):
        return apply(prim, (x,))

    fn.__name__ = prim.name
    fn.primitive = prim
    fn.applies = prim  # fn(*args) is apply(prim, args): the compiled backend may take its steps
    return fn


def _binary_fn(prim):
    def fn(a, b):
        return apply(prim, (a, b))

    fn.__name__ = prim.name
    fn.primitive = prim
    fn.applies = prim  # (as _unary_fn's)
    return fn


# The scalar namespace of numpy's values: on a scalar dual, ``np.sin(x)`` computes numpy's value
# and evaluates its derivative with numpy's functions too, as the array path does (``math``'s
# functions would raise at a point where numpy gives nan).
SCALAR_NS = SimpleNamespace(rdiv=B.NS.rdiv, sign=B.NS.sign, value=B.NS.value, where=B.NS.where)


def _ordered_primitive(name, impl, derivative, edges):
    """The array primitive of an entry with orders ``n`` (a tuple: ``(n,)`` of
    ``polygamma(n, x)``): static parameters (numbers or arrays broadcast with ``x``)."""

    def vjp(out, vals, on, n):
        d = derivative(NS, *n, vals[0], out)
        s = shape_of(vals[0])
        exact = edges and _nonfinite(d)

        def rule(ct):
            return (unbroadcast(_times(ct, d, exact), s),)

        return rule

    def jvp(out, vals, tans, n):
        return broadcast(_times(tans[0], derivative(NS, *n, vals[0], out), edges),
                         shape_of(out))

    return Primitive(name, lambda v, n: impl(*n, v), vjp, jvp)


def _first_order_only(e, what):
    """The error for a second derivative that involves ``e``'s orders: their derivatives are
    computed numerically on plain values (``e.shape``), not as differentiable expressions."""
    where = next((u for u in e.ufuncs if isinstance(u, str)), "deltaad." + e.name)
    return NotImplementedError(
        "%s: deltaad differentiates it in %s to first order only (that derivative is computed "
        "numerically); a second derivative involving %s (hessian, nested grad, jvp of grad) "
        "is not supported. Differentiate once in %s, or keep %s plain."
        % (where, e.order.name, what, e.order.name, e.order.name))


def _shaped_primitive(e, impl):
    """The array primitive of an entry with orders and ``shape``, differentiable in every
    argument: the orders' partials from ``e.shape`` (first order: on duals, an error naming
    the function), ``x``'s from ``e.derivative``."""
    k = e.orders

    def plain(vals):
        for v in vals:
            if type(v) is ArrayDual or type(v) is Dual:
                raise _first_order_only(e, e.order.name)

    def order_partial(j):
        def partial(*vals):
            plain(vals)
            return e.shape(NS, *vals)[j]

        return partial

    def x_partial(*vals):
        plain(vals[:k])
        return e.derivative(NS, *vals)

    partials = tuple(order_partial(j) for j in range(k)) + (x_partial,)
    return elementwise_primitive(e.name, impl, partials, with_out=True, edges=e.edges)


def _dual_order(e, args):
    """Whether a call of entry ``e`` has a dual among its orders and ``e`` differentiates in
    them (``e.shape``)."""
    if e.shape is None or len(args) != e.orders + 1:
        return False
    return any(type(n) is ArrayDual or type(n) is Dual for n in args[:-1])


def _array_fn(e, impl):
    """The function of entry ``e`` on arrays (and array duals), with ``impl``'s values."""
    if e.orders:
        prim = _ordered_primitive(e.name, impl, e.derivative, e.edges)
        full = _shaped_primitive(e, impl) if e.shape is not None else None

        def fn(*args):
            if full is not None and _dual_order(e, args):
                return apply(full, args)
            for n in args[:-1]:
                if type(n) is ArrayDual or type(n) is Dual:
                    table.order_of(e.name, n)  # raises: an order is not differentiable
            if len(args) != e.orders + 1:
                table.orders_of(e, args)  # raises: the count
            return apply(prim, (args[-1],), {"n": args[:-1]})

        fn.__name__ = e.name
        fn.primitive = prim
        return fn
    if e.arity == 1:
        prim = elementwise_primitive(
            e.name, impl, (lambda x, y, d=e.derivative: d(NS, x, y),), with_out=True,
            edges=e.edges)
        return _unary_fn(prim)

    def p(k, d=e.derivative):
        return lambda a, b, y: d(NS, a, b, y)[k]

    return _binary_fn(elementwise_primitive(e.name, impl, (p(0), p(1)), with_out=True,
                                            edges=e.edges))


def _scalar_fn(e, impl, array_fn):
    """The function of entry ``e`` on floats and scalar duals with ``impl``'s values (what
    ``np.<name>`` gives on a float): the derivative evaluated with numpy's functions too, as
    the array path does (``math``'s would raise at a point where numpy gives nan)."""
    where = registry.qualified_name(impl) if isinstance(impl, np.ufunc) else "deltaad." + e.name
    if e.orders:
        by_order = {}

        def fn(*args):
            if e.shape is not None and _dual_order(e, args):
                return array_fn(*args)
            k = table.orders_of(e, args)
            if k is None:
                return array_fn(*args)
            f = by_order.get(k)
            if f is None:
                fk = (lambda k: lambda v: float(impl(*k, v)))(k)
                name = table.lifted("%s(%s, .)" % (where, ", ".join(map(repr, k))), fk)
                f = by_order[k] = B.lift1(name, fk, lambda ns, v, y: e.derivative(ns, *k, v, y),
                                          SCALAR_NS, lambda v: impl(*k, v))
            return f(args[-1])

        return fn
    # ``impl`` itself gives the value on a numpy scalar (an np.float32 input stays float32)
    if e.arity == 1:
        f1 = lambda x: float(impl(x))  # noqa: E731
        return B.lift1(table.lifted(where, f1), f1, e.derivative, SCALAR_NS, impl)
    f2 = lambda a, b: float(impl(a, b))  # noqa: E731
    return B.lift2(table.lifted(where, f2), f2, e.derivative, SCALAR_NS, impl)


def _late_rules(e):
    """The factory of the rules for a function of an optional module (``scipy.special.<name>``),
    made from that function itself: its values are its own."""

    def factory(f):
        array_fn = _array_fn(e, f)
        scalar_fn = _scalar_fn(e, f, array_fn)
        if isinstance(f, np.ufunc):
            return array_fn, scalar_fn, e.chosen
        return _scalar_or_array(scalar_fn, array_fn, e.arity + e.orders)

    return factory


def _scalar_or_array(scalar_fn, array_fn, nargs):
    """A table function's implementation on duals for a plain Python function of scipy (not a
    ufunc): the scalar function on scalars, the array function otherwise."""

    def impl(*args):
        if len(args) != nargs:
            raise TypeError("%s takes %d arguments" % (array_fn.__name__, nargs))
        if all(type(a) is Dual or type(a) is float or type(a) is int or type(a) in recorders
               for a in args):
            return scalar_fn(*args)
        return array_fn(*[operand_or_raise(a) for a in args])

    return impl


def _lift_table():
    for e in table.TABLE:
        fn = _array_fn(e, e.array)
        registry.ELEMENTARY[e.name] = fn
        # in derivatives: numpy's ufunc itself where there is one (plain arrays go straight to
        # numpy; array duals come back here through numpy's dispatch)
        ufunc = next((u for u in e.ufuncs if isinstance(u, np.ufunc)), None)
        setattr(NS, e.name, fn if ufunc is None else ufunc)
        scalar = _scalar_fn(e, e.array, fn)
        setattr(SCALAR_NS, e.name, scalar)
        for u in e.ufuncs:
            if isinstance(u, str):  # a function of scipy: its rules are made from it
                registry.register_late(u, _late_rules(e), e.chosen)
            elif u is e.array and not isinstance(u, np.ufunc):  # a numpy function (np.sinc)
                registry.register(u, note=e.chosen)(fn)
            elif u is e.array:
                registry.register_ufunc(u, fn, scalar, e.chosen)
            else:  # another ufunc of the same function (np.fabs): its own values
                a = _array_fn(e, u)
                registry.register_ufunc(u, a, _scalar_fn(e, u, a), e.chosen)


_lift_table()
absolute = registry.ELEMENTARY["absolute"]


# ============================================================================================
# Arithmetic and choices of two arguments (broadcasting; cotangents are summed back)


def negative(x):
    return apply(NEGATIVE, (x,))


def _negative_vjp(out, vals, on):
    return _neg_rule


def _neg_rule(ct):
    return (-ct,)


NEGATIVE = Primitive("negative", np.negative, _negative_vjp, lambda out, vals, tans: -tans[0])


def positive(x):
    if (type(x) is ArrayDual or type(x) is Dual) and x.trace.closed:
        raise escaped_error(x.trace.level)
    return x


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
            g = unbroadcast(_plain_op(_TIMES, ct, a), sa)
            return (g, g)

        return square_rule
    if not ob:
        a = None
    if not oa:
        b = None

    def rule(ct):
        # A zero cotangent meeting an infinite factor is kept an exact zero when the cotangent
        # is a dual (higher derivatives); a first-order sweep on plain arrays stays IEEE, where
        # checking every product would cost a pass over it.
        if type(ct) is ArrayDual or type(ct) is Dual:
            return (unbroadcast(_times(ct, b), sa) if oa else None,
                    unbroadcast(_times(ct, a), sb) if ob else None)
        return (unbroadcast(_plain_op(_TIMES, ct, b), sa) if oa else None,
                unbroadcast(_plain_op(_TIMES, ct, a), sb) if ob else None)

    return rule


def _mul_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    if ta is None:
        return broadcast(_times(tb, a), shape_of(out))
    if tb is None:
        return broadcast(_times(ta, b), shape_of(out))
    return broadcast(_times(ta, b) + _times(tb, a), shape_of(out))


MUL = Primitive("multiply", np.multiply, _mul_vjp, _mul_jvp)


def _div_vjp(out, vals, on):
    a, b = vals
    oa, ob = on
    sa = shape_of(a)
    sb = shape_of(b)
    y = out if ob else None

    def rule(ct):
        if type(ct) is ArrayDual or type(ct) is Dual:  # exact zeros as for multiply
            g = _quotient(ct, b)
            return (unbroadcast(g, sa) if oa else None,
                    unbroadcast(-_times(g, y), sb) if ob else None)
        g = _plain_op(_OVER, ct, b)
        return (unbroadcast(g, sa) if oa else None,
                unbroadcast(-_plain_op(_TIMES, g, y), sb) if ob else None)

    return rule


def _div_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    if tb is None:
        return broadcast(_quotient(ta, b), shape_of(out))
    t = _times(tb, out) if ta is None else ta - _times(tb, out)
    return broadcast(_quotient(t, b) if ta is not None else -_quotient(t, b), shape_of(out))


def _quotient(t, b):
    """``t / b`` with ``_times``'s exact zeros (1/b is infinite where b is 0)."""
    r = t / b
    if _nonfinite(r):
        r = _zero_where(_zero_mask(t), r)
    return r


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
        if type(b) is float or type(b) is int or isinstance(b, (float, np.generic)) or \
                type(b) in recorders:  # (isinstance: deltaad.compile's recorded floats too)
            if b == 2:
                da = 2.0 * a
            elif b == 1:
                da = 1.0
            elif b == 0:
                da = 0.0  # a**0 is 1 everywhere: not 0 * inf at a == 0 (as the scalar rule)
            else:
                da = b * np.power(a, b - 1.0)
        elif (type(b) is np.ndarray or type(b) in recorded_arrays) and (b == 0).any():
            # the same for the zero entries of a constant exponent; the safe exponent keeps the
            # unselected branch finite, so a second derivative does not meet 0 * inf either
            zero = b == 0
            da = np.where(zero, 0.0, b * np.power(a, np.where(zero, 1.0, b - 1.0)))
        else:
            da = b * np.power(a, b - 1.0)
    if on[1]:
        av = as_ndarray(strip(a))
        pos = av > 0
        safe = np.where(pos, a, 1.0)
        db = np.where(pos, np.log(safe) * y, np.where(av == 0, 0.0, np.nan))
    return da, db


def _pow_impl(a, b):
    return np.power(a, b)


POWER = _binary("power", _pow_impl, _pow_partials)
FLOAT_POWER = _binary("float_power", np.float_power, _pow_partials)


_all = np.logical_and.reduce


def _choice_weights(a, b, y, on, greater, ignore_nan):
    oa, ob = on
    if oa and not ob and type(b) is float and b == b and _array.SHORTCUTS:  # np.maximum(x, 0.0): a plain bound
        av = a.value if type(a) is ArrayDual else a
        if type(av) is np.ndarray:
            # what the general case below computes when nothing ties and nothing is nan: where
            # every entry is either side of the bound (a tie or a nan is neither)
            g = greater(av, b)
            if _all(g | greater(b, av), None):
                return g.astype(dtype_of(y)), None
    av = as_ndarray(strip(a))
    bv = as_ndarray(strip(b))
    dt = dtype_of(y)
    # Only the weights of the operands that are duals (a constant's are never used). The
    # weights are 0, 1/2 and 1, exact in every float dtype: without a tie, the comparison
    # itself converted (what adding the tie's zero halves gives, with two numpy calls fewer).
    eq = av == bv
    if eq.any():
        eq = eq * 0.5
        wa = (greater(av, bv) + eq).astype(dt) if oa else None
        wb = (greater(bv, av) + eq).astype(dt) if ob else None
    else:
        wa = greater(av, bv).astype(dt) if oa else None
        wb = greater(bv, av).astype(dt) if ob else None
    na = np.isnan(av)
    nb = np.isnan(bv)
    if na.any() or nb.any():
        if ignore_nan:  # fmax/fmin: the non-nan argument is chosen
            if oa:
                wa = np.where(nb & ~na, 1.0, np.where(na, 0.0, wa)).astype(dt)
            if ob:
                wb = np.where(na & ~nb, 1.0, np.where(nb, 0.0, wb)).astype(dt)
        else:  # maximum/minimum propagate nan: it comes from the nan argument
            if oa:
                wa = np.where(na, 1.0, np.where(nb, 0.0, wa)).astype(dt)
            if ob:
                wb = np.where(na, 0.0, np.where(nb, 1.0, wb)).astype(dt)
    return wa, wb


MAXIMUM = _binary("maximum", np.maximum, lambda a, b, y, on: _choice_weights(a, b, y, on, np.greater, False))
MINIMUM = _binary("minimum", np.minimum, lambda a, b, y, on: _choice_weights(a, b, y, on, np.less, False))
FMAX = _binary("fmax", np.fmax, lambda a, b, y, on: _choice_weights(a, b, y, on, np.greater, True))
FMIN = _binary("fmin", np.fmin, lambda a, b, y, on: _choice_weights(a, b, y, on, np.less, True))


def _remainder_partials(a, b, y, on):
    return 1.0, (-np.floor_divide(strip(a), strip(b)) if on[1] else None)


def _fmod_partials(a, b, y, on):
    return 1.0, (-np.trunc(np.true_divide(strip(a), strip(b))) if on[1] else None)


REMAINDER = _binary("remainder", np.remainder, _remainder_partials)
FMOD = _binary("fmod", np.fmod, _fmod_partials)


def _nan_first(choose):
    """numpy's maximum/minimum on scalars: a nan argument is the result (fmax/fmin would
    ignore it)."""

    def f(a, b):
        va, vb = strip(a), strip(b)
        if va != va:
            return a
        if vb != vb:
            return b
        return choose(a, b)

    return f


def _dual_operator(name):
    """``a <op> b`` for scalar operands at least one a dual, asking the dual: a numpy scalar
    on the left would hand the operator back to numpy, which is how we got here."""
    forward = "__%s__" % name
    reflected = "__r%s__" % name

    def op(a, b):
        r = getattr(a, forward)(b) if type(a) is Dual else getattr(b, reflected)(a)
        if r is NotImplemented:
            raise TypeError("unsupported operand types for %s: %s and %s"
                            % (name, type(a).__name__, type(b).__name__))
        return r

    op.__name__ = name
    return op


def _numpy_power(ufunc):
    """``np.power`` (``np.float_power``) on floats and scalar duals: ``B.power``'s derivative
    and numpy's value. numpy's ufunc loop can differ from the scalar ``**`` in the last bit
    (its SIMD kernels on AVX-512), and ``np.power(x, y)`` must give what the plain program's
    ``np.power`` gives, at every level of a nested derivative. A numpy scalar with a dual
    exponent (``c ** x``) keeps ``**``'s value: numpy's scalar ``**`` hands itself over as this
    same call, and its own value is the scalar power's."""
    def f(a, b):
        r = B.power(a, b)
        if type(r) is not B.Dual or (type(a) is not B.Dual and isinstance(a, np.generic)):
            return r
        v = strip(r)
        with np.errstate(all="ignore"):  # (B.power gave numpy's warnings, if any, once)
            want = ufunc(strip(a), strip(b))
        if type(v) is float:
            want = float(want)
        elif type(want) is not type(v):
            return r
        if (want == v or (want != want and v != v)) and \
                math.copysign(1.0, want) == math.copysign(1.0, v):  # (the same bits)
            return r
        return _with_value(r, want)

    f.__name__ = ufunc.__name__
    return f


def _with_value(r, want):
    """The dual ``r`` (of any nesting) with ``want`` as its innermost plain value: its bindings
    and tangents as they are."""
    v = r.value
    inner = _with_value(v, want) if type(v) is B.Dual else want
    t = r.trace
    if t.is_forward:
        return B.Dual(inner, t, -1, r.tangent)
    return B.Dual(inner, t, r.id, None)


_SCALAR = {
    np.add: _dual_operator("add"), np.subtract: _dual_operator("sub"),
    np.multiply: _dual_operator("mul"), np.true_divide: _dual_operator("truediv"),
    np.floor_divide: _dual_operator("floordiv"), np.remainder: _dual_operator("mod"),
    np.power: _numpy_power(np.power), np.float_power: _numpy_power(np.float_power),
    np.negative: operator.neg, np.positive: operator.pos, np.conjugate: operator.pos,
    np.maximum: _nan_first(F.fmax), np.minimum: _nan_first(F.fmin), np.fmax: F.fmax,
    np.fmin: F.fmin,
}

_TIE = "1/2 to each argument at a tie; "
_NOTES = {
    np.power: "in the exponent: 0 where the base is 0, nan where it is negative; in the base: "
              "0 where base and exponent are 0",
    np.maximum: _TIE + "a nan argument is the result", np.minimum: _TIE + "a nan argument is the result",
    np.fmax: _TIE + "a nan argument is ignored", np.fmin: _TIE + "a nan argument is ignored",
    np.remainder: "in the divisor -floor(a / b) (the jumps ignored)",
    np.fmod: "in the divisor -trunc(a / b) (the jumps ignored)",
}
_NOTES[np.float_power] = _NOTES[np.power]

for _u, _p in (
    (np.add, ADD), (np.subtract, SUB), (np.multiply, MUL), (np.true_divide, DIV), (np.power, POWER),
    (np.float_power, FLOAT_POWER), (np.maximum, MAXIMUM), (np.minimum, MINIMUM), (np.fmax, FMAX),
    (np.fmin, FMIN), (np.remainder, REMAINDER), (np.fmod, FMOD),
):
    registry.register_ufunc(_u, _binary_fn(_p), _SCALAR.get(_u), _NOTES.get(_u, ""))
def _divmod(a, b):
    """``np.divmod(a, b)``: ``(a // b, a % b)``, numpy's floor quotient (a constant) and its
    remainder (differentiable): both come from numpy's one divmod, so the bits are its own."""
    return np.floor_divide(strip(a), strip(b)), registry.UFUNCS[np.remainder](a, b)


def _divmod_scalar(a, b):
    return np.floor_divide(strip(a), strip(b)), _SCALAR[np.remainder](a, b)


registry.register_ufunc(np.divmod, _divmod, _divmod_scalar,
                        "the quotient is a constant; the remainder as numpy.remainder")
registry.register_ufunc(np.negative, negative, operator.neg)
registry.register_ufunc(np.positive, positive, operator.pos)
registry.register_ufunc(np.conjugate, positive, operator.pos)
registry.ELEMENTARY["power"] = registry.UFUNCS[np.power]
registry.ELEMENTARY["negative"] = negative


def power(a, b):
    return apply(POWER, (a, b))


def _outer_rule(ufunc):
    def outer_(a, b):
        a = operand_or_raise(a)
        b = operand_or_raise(b)
        return registry.UFUNCS[ufunc](reshape(a, shape_of(a) + (1,) * len(shape_of(b))), b)

    return outer_


for _u in (np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum,
           np.arctan2, np.hypot, np.logaddexp):
    registry.METHODS[(_u, "outer")] = _outer_rule(_u)

# Piecewise constant: derivative zero, computed on plain values.
defconst(
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal, np.isnan,
    np.isinf, np.isfinite, np.signbit, np.sign, np.floor, np.ceil, np.trunc, np.rint,
    np.floor_divide, np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.spacing,
)


# ============================================================================================
# Choosing by a condition: where, select, clip


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
        return as_ndarray(asarray_plain(c)).astype(bool)
    return as_ndarray(strip(c)).astype(bool)


def _where_operand(x):
    """Whether ``operand_or_raise`` keeps ``x`` as it is: an array dual, a float, a real
    ndarray."""
    t = type(x)
    return t is ArrayDual or t is float or t is np.ndarray and x.dtype.kind in "fiub"


@register(np.where)
def where(condition, x=NoValue, y=NoValue):
    if x is NoValue and y is NoValue:
        return np.nonzero(_plain_cond(condition))
    if x is NoValue or y is NoValue:
        raise ValueError("either both or neither of x and y should be given")
    if type(condition) is np.ndarray and condition.dtype.kind == "b" and _array.SHORTCUTS and \
            _where_operand(x) and _where_operand(y):  # the commonest call, its checks short
        return apply(WHERE, (x, y), {"cond": condition.astype(bool)})
    return apply(WHERE, (operand_or_raise(x), operand_or_raise(y)), {"cond": _plain_cond(condition)})


@register(np.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = operand_or_raise(default)
    for c, ch in reversed(list(zip(condlist, choicelist))):
        out = where(c, ch, out)
    return out


@register(np.clip, note="1 for lo <= x <= hi (bounds included); outside, to the bound taken "
                        "(hi when lo > hi)")
def clip(a, a_min=NoValue, a_max=NoValue, out=None, *, min=NoValue, max=NoValue, **kwargs):
    no_out("clip", out)
    lo = a_min if a_min is not NoValue else (min if min is not NoValue else None)
    hi = a_max if a_max is not NoValue else (max if max is not NoValue else None)
    x = operand_or_raise(a)
    r = x
    if lo is not None:
        lo = operand_or_raise(lo)
        r = apply(WHERE, (lo, r), {"cond": as_ndarray(as_ndarray(strip(x)) < as_ndarray(strip(lo)))})
    if hi is not None:
        hi = operand_or_raise(hi)
        r = apply(WHERE, (hi, r), {"cond": as_ndarray(as_ndarray(strip(r)) > as_ndarray(strip(hi)))})
    return r


# ============================================================================================
# Casts and copies


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
        return as_ndarray(x).astype(dt)
    if dt.kind == "c":
        if registry.COMPLEX is None:
            raise complex_error(x)
        return registry.COMPLEX.function(np.astype, (x, dt), {})
    if dt.kind != "f":  # piecewise constant: a plain result (derivative zero)
        return as_ndarray(strip(x)).astype(dt)
    if dt == dtype_of(x):
        return x
    return apply(ASTYPE, (x,), {"dtype": dt})


if hasattr(np, "astype"):
    register(np.astype)(lambda x, dtype, /, *, copy=True, **kw: astype(x, dtype))


@register(np.copy)
def copy(a, order="K", subok=False):
    return a


@register(np.real)
def real(val):
    return val


@register(np.imag)
def imag(val):
    return np.zeros(shape_of(val), dtype=dtype_of(val))



# ============================================================================================
# modf, ldexp, frexp: exact scalings and a fractional part (numpy's values)


def _modf_frac(v):
    return np.modf(v)[0]


MODF = elementwise_primitive("modf", _modf_frac, (lambda v: 1.0,), edges=False)


def _modf(x):
    return apply(MODF, (x,)), np.trunc(as_ndarray(strip(x)))


def _modf_scalar(x):
    return B.lift([x], lambda v: float(np.modf(v)[0]), lambda v: (1.0,)), float(np.trunc(strip(x)))


registry.register_ufunc(np.modf, _modf, _modf_scalar,
                        "the fractional part: derivative 1 (the jumps ignored); the integral "
                        "part is a constant")


def _plain_int(name, n):
    if type(n) is ArrayDual or type(n) is Dual:
        raise TypeError("numpy.%s: the exponent is an integer and has no derivative; pass a "
                        "plain int (deltaad.value(n))" % name)
    n = as_ndarray(n)
    if n.dtype.kind == "f" and (n == np.floor(n)).all():  # a scalar operand arrives as a float
        n = n.astype(np.int64)
    return n


def _ldexp_vjp(out, vals, on, n):
    s = shape_of(vals[0])

    def rule(ct):
        return (unbroadcast(np.ldexp(ct, n), s),)

    return rule


LDEXP = Primitive("ldexp", lambda v, n: np.ldexp(v, n), _ldexp_vjp,
                  lambda out, vals, tans, n: broadcast(np.ldexp(tans[0], n), shape_of(out)))


def _ldexp(x, n):
    return apply(LDEXP, (x,), {"n": _plain_int("ldexp", n)})


def _ldexp_scalar(x, n):
    n = _plain_int("ldexp", n)
    return B.lift([x], lambda v: float(np.ldexp(v, n)), lambda v: (float(np.ldexp(1.0, n)),))


def _frexp(x):
    e = np.frexp(as_ndarray(strip(x)))[1]
    return _ldexp(x, -e), e


def _frexp_scalar(x):
    e = np.frexp(strip(x))[1]
    return _ldexp_scalar(x, -e), e


registry.register_ufunc(np.ldexp, _ldexp, _ldexp_scalar, "the exponent is an integer (a constant)")
registry.register_ufunc(np.frexp, _frexp, _frexp_scalar, "the mantissa: derivative 2**-e (the "
                                                         "jumps ignored); the exponent is a constant")


# ============================================================================================
# interp, nan_to_num, piecewise


def _interp_terms(x, fp, xp, left, right):
    """The derivative of ``interp(x, xp, fp)``: its slope in ``x`` (0 outside ``[xp[0],
    xp[-1]]``) and its weights on ``fp`` (shape ``x.shape + fp.shape``), as numpy expressions
    of ``x`` and ``fp`` (they differentiate again)."""
    xv = as_ndarray(strip(x))
    n = xp.shape[0]
    if n == 1:
        w = ((xv == xp[0]) | ((xv < xp[0]) & (left is None)) | ((xv > xp[0]) & (right is None)))
        return np.zeros(xv.shape), w[..., None] * np.ones(1)
    j = np.clip(np.searchsorted(xp, xv, side="right") - 1, 0, n - 2)
    inside = (xv >= xp[0]) & (xv <= xp[-1])
    dx = xp[j + 1] - xp[j]
    t = (x - xp[j]) / dx
    e = np.arange(n)
    lo = (j[..., None] == e).astype(float)
    hi = (j[..., None] + 1 == e).astype(float)
    fpj = np.sum(lo * fp, axis=-1)
    fpk = np.sum(hi * fp, axis=-1)
    slope = np.where(inside, (fpk - fpj) / dx, 0.0)
    t1 = t[..., None] if np.ndim(xv) or type(t) is ArrayDual else np.reshape(t, (1,))
    outside = np.zeros(xv.shape + (n,))
    if left is None:
        outside = outside + ((xv < xp[0])[..., None] & (e == 0))
    if right is None:
        outside = outside + ((xv > xp[-1])[..., None] & (e == n - 1))
    w = np.where(inside[..., None], lo * (1.0 - t1) + hi * t1, outside)
    return slope, w


def _interp_vjp(out, vals, on, xp, left, right):
    x, fp = vals
    slope, w = _interp_terms(x, fp, xp, left, right)
    sx = shape_of(x)

    def rule(ct):
        gx = ct * slope if on[0] else None
        gfp = None
        if on[1]:
            c = ct[..., None] if sx else reshape(ct, (1,))
            gfp = np.sum(reshape(c * w, (-1, xp.shape[0])), axis=0)
        return gx, gfp

    return rule


def _interp_jvp(out, vals, tans, xp, left, right):
    x, fp = vals
    slope, w = _interp_terms(x, fp, xp, left, right)
    t = None
    if tans[0] is not None:
        t = tans[0] * slope
    if tans[1] is not None:
        u = np.sum(w * tans[1], axis=-1)
        t = u if t is None else t + u
    return t


INTERP = Primitive(
    "interp", lambda x, fp, xp, left, right: np.interp(x, xp, fp, left=left, right=right),
    _interp_vjp, _interp_jvp)


@register(np.interp, note="in x: the slope of the segment on the right of a knot (on the left "
                          "at the last), 0 outside [xp[0], xp[-1]]; linear in fp")
def interp(x, xp, fp, left=None, right=None, period=None):
    for name, v in (("xp", xp), ("left", left), ("right", right), ("period", period)):
        if is_dual(v) or isinstance(v, (list, tuple)) and any(is_dual(e) for e in v):
            raise TypeError("numpy.interp: %s is a dual number; deltaad differentiates interp in "
                            "x and fp (pass deltaad.value(%s))" % (name, name))
    if period is not None:
        unsupported("interp", "period=")
    xo = operand_or_raise(x)
    fo = operand_or_raise(fp)
    if type(fo) is Dual:
        fo = reshape(fo, (1,))
    return apply(INTERP, (xo, fo), {"xp": as_ndarray(xp, dtype=float), "left": left,
                                     "right": right})


@register(np.nan_to_num, note="1 where x is finite, 0 where it is replaced")
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    xo = operand_or_raise(x)
    xv = as_ndarray(strip(xo))
    if xv.dtype.kind not in "fc":
        return xo
    info = np.finfo(xv.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    r = xo
    if np.isnan(xv).any():
        r = where(np.isnan(xv), nan, r)
    if np.isposinf(xv).any():
        r = where(np.isposinf(xv), big, r)
    if np.isneginf(xv).any():
        r = where(np.isneginf(xv), small, r)
    return r if r is not xo or type(xo) is not Dual else xo


@register(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """numpy's algorithm with functional updates: each function sees the entries its condition
    selects, and its results are set there."""
    from .array import getitem, update

    xo = operand_or_raise(x)
    xv = as_ndarray(strip(xo))
    n2 = len(funclist)
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray)) and xv.ndim != 0):
        condlist = [condlist]
    conds = as_ndarray([as_ndarray(strip(c), dtype=bool) for c in condlist], dtype=bool)
    n = len(conds)
    if n == n2 - 1:
        conds = np.concatenate([conds, ~np.any(conds, axis=0, keepdims=True)], axis=0)
        n += 1
    elif n != n2:
        raise ValueError("with {} condition(s), either {} or {} functions are expected"
                         .format(n, n, n + 1))
    y = np.zeros(xv.shape, dtype=xv.dtype if xv.dtype.kind == "f" else float)
    for cond, func in zip(conds, funclist):
        cond = np.broadcast_to(cond, xv.shape)
        if not callable(func):
            y = update(y, func, cond, "set", True)
        else:
            vals = getitem(xo, cond, True) if xv.ndim else xo
            if np.size(strip(vals)) > 0:
                if xv.ndim == 0:
                    if cond:
                        y = update(y, func(vals, *args, **kw), (), "set", True)
                else:
                    y = update(y, func(vals, *args, **kw), cond, "set", True)
    return y
