"""The elementary functions, one table entry each: the single place their derivatives live.

Each entry says, once: the function's names (numpy's spelling, and ``math``'s), its value on a
float (``math``'s semantics: a ``ValueError`` outside the domain), its value on arrays (numpy's
semantics: nan outside the domain), its derivative, its domain and the value chosen where it is
not differentiable. Everything else is derived from this table: the backends' scalar
functions and ``Dual`` methods, ``deltaad.sin`` and friends, the rules for ``np.sin`` on array
duals, the documentation's table and the tests' tables.

A derivative is written once, as an expression over a *namespace* ``ns`` (Haskell ``ad``'s
``sin = lift1 sin cos``, with the namespace as the carrier): ``ns.cos(x)`` means deltaad's
``cos`` on scalars and numpy's on arrays. So the same expression serves a float, a scalar
dual, a 0-d or n-d array and an array dual, and because ``ns``'s functions are themselves
differentiable, a derivative differentiates again (second derivatives, nesting). Besides the
table's functions a namespace offers four helpers, each with the same meaning on scalars and
on arrays:

- ``ns.value(x)``: the plain value of ``x`` (a constant);
- ``ns.where(c, a, b)``: ``a`` where the plain condition ``c`` holds, else ``b``;
- ``ns.rdiv(a, b)``: ``a / b``, but IEEE (inf or nan, never an exception) where ``b`` is 0;
  every divisor given to it is >= 0 in exact arithmetic (a square, a square root, ``x`` of
  ``log``), so at 0 the result takes the sign of ``a`` only -- the one-sided derivative;
- ``ns.sign(x)``: -1, 0, 1 or nan, the sign of ``x``'s value (a constant).

To add an elementary function, add one entry (and, only if it must be fast on scalars, a case
in the compiled core's ``_float_unary``, which a test holds to this table).

Two extensions of the form: an entry with an ``order`` takes a leading *order* before its
real argument -- an integer (``polygamma(n, x)``) or a real parameter (``jv(v, x)``,
``gammainc(a, x)``): the order is a static parameter, not differentiable (a dual there is an
error naming it), and the derivative is ``(ns, n, x, y) -> dy/dx``; an entry that also gives
``shape`` (``gammainc``'s derivative in ``a``, numerical) differentiates in its orders to first
order. An entry with ``needs="scipy"`` computes its
values with ``scipy.special`` (imported on first use: scipy is optional); without scipy it
raises an ``ImportError`` naming the function, never a wrong value.
"""

from deltaad._plainmath import math

from deltaad._plainnumpy import np

from . import incomplete

INF = math.inf
NAN = math.nan
LN2 = math.log(2.0)
LN10 = math.log(10.0)
LOG2E = 1.0 / LN2
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)
INV_SQRT_2PI = 1.0 / SQRT_2PI
DEG2RAD = math.pi / 180.0
RAD2DEG = 180.0 / math.pi


class Domain:
    """The real interval on which a function is real: ``[lo, hi]``, each end open or closed."""

    __slots__ = ("lo", "hi", "lo_closed", "hi_closed")

    def __init__(self, lo=-INF, hi=INF, lo_closed=False, hi_closed=False):
        self.lo, self.hi, self.lo_closed, self.hi_closed = lo, hi, lo_closed, hi_closed

    def __contains__(self, x):
        lo_ok = x > self.lo or (self.lo_closed and x == self.lo)
        hi_ok = x < self.hi or (self.hi_closed and x == self.hi)
        return lo_ok and hi_ok

    def __str__(self):
        if self.lo == -INF and self.hi == INF:
            return "all reals"
        return "%s%s, %s%s" % ("[" if self.lo_closed else "(", _num(self.lo), _num(self.hi),
                               "]" if self.hi_closed else ")")


def _num(v):
    return {INF: "inf", -INF: "-inf"}.get(v, "%g" % v)


REALS = Domain()


class Order:
    """The static leading parameter of an entry (``n`` of ``polygamma(n, x)``, ``a`` of
    ``gammainc(a, x)``): its name, whether it must be an integer, and where it is defined."""

    __slots__ = ("name", "integer", "domain")

    def __init__(self, name="n", integer=True, domain=Domain(0.0, INF, True)):
        self.name, self.integer, self.domain = name, integer, domain

    def __str__(self):
        kind = "%s %s" % ("an integer" if self.integer else "a real", self.name)
        whole = self.domain.lo == -INF and self.domain.hi == INF
        return kind if whole else "%s in %s" % (kind, self.domain)


class Elementary:
    """One elementary function (see the module docstring).

    - ``name``: deltaad's name, numpy's spelling (``deltaad.<name>``);
    - ``arity``: 1 or 2;
    - ``float``: the value on Python floats, ``math``'s semantics;
    - ``array``: the value on numpy arrays and scalars, numpy's semantics;
    - ``ufuncs``: the numpy ufuncs it answers for (``np.arcsin``), and ``scipy.special``
      ufuncs named ``"scipy.special.<name>"`` (registered only when scipy is imported);
    - ``math``: its names in Python's ``math`` module;
    - ``derivative``: ``(ns, x, y) -> dy/dx`` (unary) or ``(ns, a, b, y) -> (dy/da, dy/db)``,
      where ``y`` is the function's value;
    - ``domain``: where it is real; ``chosen``: the derivative chosen where there is none (text);
    - ``edges``: its derivative can be infinite or nan at a point of its domain where the value
      is finite (then a zero tangent or cotangent must be kept an exact zero explicitly on
      arrays, as the scalar paths do);
    - ``orders``: the number of leading orders (``polygamma(n, x)``: 1; ``betainc(a, b, x)``:
      2): ``float``, ``array`` and ``derivative`` take them before ``x``; they are not
      differentiable unless ``shape`` is given; ``order`` (an :class:`Order`) says what they
      may be;
    - ``shape``: ``(ns, *orders, x, y) -> (dy/dn for each order)``, the first derivatives in
      the orders (``gammainc``'s in ``a``), computed numerically on plain values: with it a
      dual order is differentiated to first order, and a second derivative that involves an
      order is an error naming the function (without it, any dual order is an error);
    - ``needs``: the optional module its values come from (``"scipy"``), or ``""``.
    """

    __slots__ = ("name", "arity", "float", "array", "ufuncs", "math", "derivative", "domain",
                 "chosen", "edges", "orders", "needs", "order", "shape")

    def __init__(self, name, arity, float_impl, array, ufuncs, math_names, derivative, domain,
                 chosen, edges, orders=0, needs="", order=None, shape=None):
        self.name = name
        self.arity = arity
        self.float = float_impl
        self.array = array
        self.ufuncs = ufuncs
        self.math = math_names
        self.derivative = derivative
        self.domain = domain
        self.chosen = chosen
        self.edges = edges
        self.orders = orders
        self.needs = needs
        self.order = (order or Order()) if orders else None
        self.shape = shape

    def __repr__(self):
        return "<elementary %s>" % self.name


TABLE = []


def _entry(arity, name, float_impl, array, derivative, *, ufuncs=None, math=(), domain=REALS,
           chosen="", edges=False, orders=0, needs="", order=None, shape=None):
    if ufuncs is None:
        ufuncs = (array,) if isinstance(array, np.ufunc) else ()
    if order is not None:
        orders = max(orders, 1)
    e = Elementary(name, arity, float_impl, array, tuple(ufuncs), tuple(math), derivative,
                   domain, chosen, edges, orders, needs, order, shape)
    TABLE.append(e)
    return e


def order_of(name, n):
    """The order ``n`` of entry ``name`` (``polygamma(n, x)``: an int; ``jv(v, x)``: a float),
    or None for an array of orders (the array path takes it). The order is static: a dual, or
    a non-integer where an integer is needed, is an error naming it."""
    e = BY_NAME[name]
    o = e.order
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        return int(n) if o.integer else float(n)
    if isinstance(n, (float, np.floating)):
        if not o.integer:
            return float(n)
        if n == math.floor(n):
            return int(n)
    if isinstance(n, np.ndarray) and n.dtype.kind in "iuf":
        return None
    # the name the user wrote: scipy's where the function is scipy's
    where = next((u for u in e.ufuncs if isinstance(u, str)), "deltaad." + name)
    if o.integer:
        raise TypeError("%s: the order %s must be an integer, not %s (the order has no "
                        "derivative; pass a plain int)" % (where, o.name, type(n).__name__))
    what = "parameters %s must be plain numbers" if "," in o.name else \
        "parameter %s must be a plain number"
    raise TypeError(("%s: the " + what + ", not %s (deltaad has no derivative of %s in %s; "
                     "pass a plain float)") % (where, o.name, type(n).__name__, name, o.name))


def orders_of(e, args):
    """The orders among ``args`` (an entry's call: its ``e.orders`` orders, then ``x``) as a
    tuple, or None if one is an array; an error naming the entry for a wrong count."""
    if len(args) != e.orders + 1:
        raise TypeError("%s takes %d arguments, got %d" % (e.name, e.orders + 1, len(args)))
    k = tuple(order_of(e.name, n) for n in args[:-1])
    return None if None in k else k


LIFTED = {}  # the name of a lifted scalar function -> the float function behind it


def lifted(name, f):
    """Register ``f``, the float function behind the lifted scalar function ``name`` (a table
    function bound to its orders, ``jv(1.5, .)``, or numpy's own ``numpy.tanh``): a number
    :mod:`deltaad.compile` records reaches the backend's fallback under ``name``, and the
    recording then calls ``f`` -- the function the uncompiled call computes with."""
    LIFTED[name] = f
    return name


def lift(e, lift1, lift2, fallback, dual):
    """The scalar function of entry ``e`` made with a backend's ``lift1``/``lift2`` (its
    ``Dual`` type is ``dual``, its ``fallback`` gives the array path): for an entry with
    orders, one lifted function per orders, made on first use."""
    if not e.orders:
        return (lift1 if e.arity == 1 else lift2)(e.name, e.float, e.derivative)
    by_order = {}

    def fn(*args):
        if e.shape is not None and any(type(n) is dual or type(n).__name__ == "ArrayDual"
                                       for n in args[:-1]):
            return fallback(e.name, *args)  # a dual order: the array path differentiates it
        k = orders_of(e, args)
        x = args[-1]
        tx = type(x)
        if k is None or not (tx is float or tx is dual or tx is int or
                             isinstance(x, (float, int)) and not isinstance(x, bool)):
            return fallback(e.name, *args)
        f = by_order.get(k)
        if f is None:
            fk = (lambda k: lambda v: e.float(*k, v))(k)
            name = lifted("%s(%s, .)" % (e.name, ", ".join(map(repr, k))), fk)
            f = by_order[k] = lift1(name, fk, lambda ns, v, y: e.derivative(ns, *k, v, y))
        return f(x)

    fn.__name__ = fn.__qualname__ = e.name
    fn.__doc__ = "%s(%s, x) of a float or a dual (elementwise numpy for arrays)." % (
        e.name, e.order.name)
    return fn


def unary(name, float_impl, array, derivative, **kw):
    """Add a function of one real to the table."""
    return _entry(1, name, float_impl, array, derivative, **kw)


def binary(name, float_impl, array, derivative, **kw):
    """Add a function of two reals to the table."""
    return _entry(2, name, float_impl, array, derivative, **kw)


# --------------------------------------------------------------------------------------------
# Float implementations that ``math`` does not have


def sigmoid_float(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def sigmoid_array(x):
    x = np.asarray(x)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def softplus_float(x):
    return math.log1p(math.exp(-abs(x))) + (x if x > 0.0 else 0.0)


def softplus_array(x):
    x = np.asarray(x)
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def logaddexp_float(a, b):
    if a == b:  # numpy's formula, also for infinities of one sign
        return a + LN2
    d = a - b
    if d != d:
        return d
    m = a if d > 0 else b
    return m + math.log1p(math.exp(-abs(d)))


def logaddexp2_float(a, b):
    if a == b:  # numpy's formula, also for infinities of one sign
        return a + 1.0
    d = a - b
    if d != d:
        return d
    m = a if d > 0 else b
    return m + LOG2E * math.log1p(math.exp2(-abs(d)))


def special(name):
    """``scipy.special.<name>``, importing scipy on first use; an ``ImportError`` naming the
    function when scipy is not installed (scipy is optional)."""
    f = _SPECIAL.get(name)
    if f is None:
        try:
            from scipy import special as sp
        except ImportError:
            raise ImportError("deltaad.%s computes scipy.special.%s, and scipy is not installed "
                              "(pip install scipy)" % (name, name)) from None
        f = _SPECIAL[name] = getattr(sp, name)
    return f


_SPECIAL = {}


def _scipy_array(name):
    """The values of ``scipy.special.<name>`` on arrays (scipy imported on first use)."""

    def impl(*args):
        return special(name)(*args)

    impl.__name__ = name
    return impl


def _scipy_float(name, overflows=False):
    """``scipy.special.<name>`` on floats with ``math``'s semantics: a ``ValueError`` ("math
    domain error") where scipy gives nan or an infinity at a finite point (a pole, the end of
    the domain), an ``OverflowError`` instead for a function that ``overflows`` (grows past
    the largest float)."""

    def f(*args):
        y = float(special(name)(*args))
        if not math.isfinite(y) and all(math.isfinite(a) for a in args):
            if y != y or not overflows:
                raise ValueError("math domain error")
            raise OverflowError("math range error")
        if y != y and all(a == a for a in args):
            raise ValueError("math domain error")
        return y

    f.__name__ = name
    return f


def logit_float(x):
    """scipy's formula: log(x / (1 - x)), and log1p(s) - log1p(-s) with s = 2 (x - 1/2)
    near 1/2, where the first loses precision."""
    if not 0.0 < x < 1.0:
        if x != x:
            return x
        raise ValueError("math domain error")
    if x < 0.3 or x > 0.65:
        return math.log(x / (1.0 - x))
    s = 2.0 * (x - 0.5)
    return math.log1p(s) - math.log1p(-s)


def log_expit_float(x):
    """scipy's formula for log(expit(x))."""
    if x < 0.0:
        return x - math.log1p(math.exp(x))
    return -math.log1p(math.exp(-x))


def xlogy_float(x, y):
    """x log(y), and 0 where x is 0 (unless y is nan), as scipy."""
    if x == 0.0 and y == y:
        return 0.0
    return x * math.log(y)


def xlog1py_float(x, y):
    """x log1p(y), and 0 where x is 0 (unless y is nan), as scipy."""
    if x == 0.0 and y == y:
        return 0.0
    return x * math.log1p(y)


def entr_float(x):
    """-x log(x), 0 at 0 (a ValueError below 0, where scipy gives -inf)."""
    if x > 0.0:
        return -x * math.log(x)
    if x == 0.0 or x != x:
        return x + 0.0
    raise ValueError("math domain error")


def exp10_float(x):
    return math.pow(10.0, x)


def _scipy_or(name, fallback):
    """scipy.special's ufunc ``name`` on arrays when scipy imports, else ``fallback`` applied
    elementwise (scipy is optional; it is imported on first use: it is slow to import)."""
    box = []

    def impl(x):
        if not box:
            try:
                from scipy import special
                box.append(getattr(special, name))
            except ImportError:
                box.append(np.vectorize(_ieee(fallback), otypes=[float]))
        x = np.asarray(x)
        r = box[0](x)
        return r.astype(x.dtype) if x.dtype.kind == "f" and r.dtype != x.dtype else r

    impl.__name__ = name
    return impl


def _ieee(f):
    """A float function with ``math``'s errors as one giving nan (numpy's semantics)."""

    def g(*args):
        try:
            return f(*args)
        except (ValueError, ZeroDivisionError):
            return NAN
        except OverflowError:
            return INF

    return g


# --------------------------------------------------------------------------------------------
# The table

LOG = "+inf at 0 (the one-sided derivative)"

unary("sin", math.sin, np.sin, lambda ns, x, y: ns.cos(x), math=["sin"])
unary("cos", math.cos, np.cos, lambda ns, x, y: -ns.sin(x), math=["cos"])
unary("tan", math.tan, np.tan, lambda ns, x, y: 1.0 + y * y, math=["tan"])
unary("arcsin", math.asin, np.arcsin, lambda ns, x, y: ns.rdiv(1.0, ns.sqrt(1.0 - x * x)),
      math=["asin"], domain=Domain(-1.0, 1.0, True, True), chosen="+inf at -1 and 1",
      edges=True)
unary("arccos", math.acos, np.arccos, lambda ns, x, y: -ns.rdiv(1.0, ns.sqrt(1.0 - x * x)),
      math=["acos"], domain=Domain(-1.0, 1.0, True, True), chosen="-inf at -1 and 1",
      edges=True)
unary("arctan", math.atan, np.arctan, lambda ns, x, y: 1.0 / (1.0 + x * x), math=["atan"])
unary("sinh", math.sinh, np.sinh, lambda ns, x, y: ns.cosh(x), math=["sinh"])
unary("cosh", math.cosh, np.cosh, lambda ns, x, y: ns.sinh(x), math=["cosh"])
unary("tanh", math.tanh, np.tanh, lambda ns, x, y: 1.0 - y * y, math=["tanh"])
unary("arcsinh", math.asinh, np.arcsinh, lambda ns, x, y: 1.0 / ns.sqrt(x * x + 1.0),
      math=["asinh"])
unary("arccosh", math.acosh, np.arccosh, lambda ns, x, y: ns.rdiv(1.0, ns.sqrt(x * x - 1.0)),
      math=["acosh"], domain=Domain(1.0, INF, True), chosen="+inf at 1", edges=True)
unary("arctanh", math.atanh, np.arctanh, lambda ns, x, y: ns.rdiv(1.0, 1.0 - x * x),
      math=["atanh"], domain=Domain(-1.0, 1.0), edges=True)
unary("exp", math.exp, np.exp, lambda ns, x, y: y, math=["exp"])
unary("expm1", math.expm1, np.expm1, lambda ns, x, y: y + 1.0, math=["expm1"])
unary("exp2", math.exp2, np.exp2, lambda ns, x, y: y * LN2, math=["exp2"])
unary("log", math.log, np.log, lambda ns, x, y: ns.rdiv(1.0, x), math=["log"],
      domain=Domain(0.0), chosen=LOG, edges=True)
unary("log1p", math.log1p, np.log1p, lambda ns, x, y: ns.rdiv(1.0, 1.0 + x), math=["log1p"],
      domain=Domain(-1.0), chosen="+inf at -1", edges=True)
unary("log2", math.log2, np.log2, lambda ns, x, y: ns.rdiv(1.0, x * LN2), math=["log2"],
      domain=Domain(0.0), chosen=LOG, edges=True)
unary("log10", math.log10, np.log10, lambda ns, x, y: ns.rdiv(1.0, x * LN10), math=["log10"],
      domain=Domain(0.0), chosen=LOG, edges=True)
unary("sqrt", math.sqrt, np.sqrt, lambda ns, x, y: ns.rdiv(0.5, y), math=["sqrt"],
      domain=Domain(0.0, INF, True), chosen="+inf at 0 (also at -0.0)", edges=True)
unary("cbrt", math.cbrt, np.cbrt, lambda ns, x, y: ns.rdiv(1.0, 3.0 * (y * y)), math=["cbrt"],
      chosen="+inf at 0", edges=True)
unary("absolute", abs, np.absolute, lambda ns, x, y: ns.sign(x), ufuncs=[np.absolute, np.fabs],
      math=["fabs"], chosen="0 at 0 (a subgradient; nan at nan)")
unary("square", lambda x: x * x, np.square, lambda ns, x, y: 2.0 * x)
unary("reciprocal", lambda x: 1.0 / x, np.reciprocal, lambda ns, x, y: -(y * y))
unary("deg2rad", lambda x: x * DEG2RAD, np.deg2rad, lambda ns, x, y: DEG2RAD,
      ufuncs=[np.deg2rad, np.radians], math=["radians"])
unary("rad2deg", lambda x: x * RAD2DEG, np.rad2deg, lambda ns, x, y: RAD2DEG,
      ufuncs=[np.rad2deg, np.degrees], math=["degrees"])
unary("erf", math.erf, _scipy_or("erf", math.erf),
      lambda ns, x, y: TWO_OVER_SQRT_PI * ns.exp(-(x * x)),
      ufuncs=["scipy.special.erf"], math=["erf"])
unary("erfc", math.erfc, _scipy_or("erfc", math.erfc),
      lambda ns, x, y: -(TWO_OVER_SQRT_PI * ns.exp(-(x * x))),
      ufuncs=["scipy.special.erfc"], math=["erfc"])
unary("sigmoid", sigmoid_float, sigmoid_array, lambda ns, x, y: y * (1.0 - y),
      ufuncs=["scipy.special.expit"])
unary("softplus", softplus_float, softplus_array, lambda ns, x, y: ns.sigmoid(x))


def _arctan2_partials(ns, y, x, v):
    r = x * x + y * y
    origin = ns.value(r) == 0.0  # undefined at the origin: nan, like 0/0
    rs = ns.where(origin, 1.0, r)
    return ns.where(origin, NAN, x / rs), ns.where(origin, NAN, -y / rs)


def _hypot_partials(ns, a, b, h):
    origin = ns.value(h) == 0.0  # not differentiable at the origin; 0 is a subgradient
    hs = ns.where(origin, 1.0, h)
    return ns.where(origin, 0.0, a / hs), ns.where(origin, 0.0, b / hs)


def heaviside_float(x, h0):
    """numpy's heaviside: 0 below 0, ``h0`` at 0, 1 above (nan at nan)."""
    if x != x:
        return x
    return 0.0 if x < 0.0 else (h0 if x == 0.0 else 1.0)


def sinc_float(x):
    """numpy's formula: sin(y) / y with y = pi x (pi 1e-20 at 0)."""
    y = math.pi * (1.0e-20 if x == 0.0 else x)
    return math.sin(y) / y


_SINC_SERIES = [(-1) ** k * 2 * k * math.pi ** (2 * k) / math.factorial(2 * k + 1)
                for k in range(1, 12)]


def _sinc_derivative(ns, x, y):
    """(cos(pi x) - sinc(x)) / x; for |x| < 1/4 its power series (the quotient cancels, and
    its own derivative more so), 0 at 0."""
    small = abs(ns.value(x)) < 0.25
    u = x * x
    series = _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):
        series = c + u * series
    return ns.where(small, x * series,
                    (ns.cos(math.pi * x) - y) / ns.where(small, 1.0, x))


unary("sinc", sinc_float, np.sinc, _sinc_derivative, ufuncs=[np.sinc])
binary("copysign", math.copysign, np.copysign,
       lambda ns, a, b, y: (ns.sign(a) * ns.sign(y), 0.0), math=["copysign"],
       chosen="d/da 0 at a = 0 (as abs); d/db 0 (b gives only a sign)")
binary("heaviside", heaviside_float, np.heaviside,
       lambda ns, x, h0, y: (0.0, ns.where(ns.value(x) == 0.0, 1.0, 0.0)),
       chosen="d/dx 0 (also at the jump); d/dh0 1 where x = 0, else 0")
binary("arctan2", math.atan2, np.arctan2, _arctan2_partials, math=["atan2"],
       chosen="nan at (0, 0)")
binary("hypot", math.hypot, np.hypot, _hypot_partials, math=["hypot"], chosen="(0, 0) at (0, 0)")
binary("logaddexp", logaddexp_float, np.logaddexp,
       lambda ns, a, b, y: (ns.exp(a - y), ns.exp(b - y)))
binary("logaddexp2", logaddexp2_float, np.logaddexp2,
       lambda ns, a, b, y: (ns.exp2(a - y), ns.exp2(b - y)))



# --------------------------------------------------------------------------------------------
# scipy.special's functions (the values of those marked ``needs="scipy"`` are scipy's own)

SCIPY = "scipy"


def _sp(name):
    return ["scipy.special." + name]


def _guard_pos(ns, x, f, at_zero):
    """``f(x)`` where ``x > 0``, ``at_zero`` at 0 and nan below, without evaluating ``f`` at
    the others (``log`` at 0 would raise on floats)."""
    xv = ns.value(x)
    pos = xv > 0.0
    return ns.where(pos, f(ns.where(pos, x, 1.0)), ns.where(xv == 0.0, at_zero, NAN))


_RATIO_SERIES = [0.5 / (4.0 ** k * math.factorial(k) * math.factorial(k + 1)) for k in range(10)]


def _bessel_ratio(ns, x, y, alternating, scaled=False):
    """``y / x`` for ``y = I1(x)`` or ``J1(x)`` (``alternating``), times ``exp(-|x|)`` when
    ``scaled`` (``i1e``): for ``|x| < 1`` the power series ``sum (+-x^2/4)^k / (2 k! (k+1)!)``
    (to rounding: ten terms), where the quotient's own derivative ``y'/x - y/x^2`` would cancel
    (catastrophically near 0); 1/2 at 0."""
    small = abs(ns.value(x)) < 1.0
    u = x * x
    series = 0.0
    for k in range(len(_RATIO_SERIES) - 1, -1, -1):
        c = -_RATIO_SERIES[k] if alternating and k % 2 else _RATIO_SERIES[k]
        series = c + u * series if k < len(_RATIO_SERIES) - 1 else c
    if scaled:
        series = series * ns.exp(-ns.absolute(x))
    return ns.where(small, series, y / ns.where(small, 1.0, x))


def _xlogy_partials(ns, x, y, v):
    # d/dy x / y is 0/0 at the origin only; xlogy(0, y) is 0 for every y: choose 0 there
    origin = (ns.value(x) == 0.0) & (ns.value(y) == 0.0)
    return _guard_pos(ns, y, ns.log, -INF), ns.where(origin, 0.0, ns.rdiv(x, y))


def _xlog1py_partials(ns, x, y, v):
    yv = ns.value(y)
    ok = yv > -1.0
    dx = ns.where(ok, ns.log1p(ns.where(ok, y, 0.0)), ns.where(yv == -1.0, -INF, NAN))
    origin = (ns.value(x) == 0.0) & (yv == -1.0)
    return dx, ns.where(origin, 0.0, ns.rdiv(x, 1.0 + y))


def _beta_partials(ns, a, b, y):
    s = ns.digamma(a + b)
    return y * (ns.digamma(a) - s), y * (ns.digamma(b) - s)


def _betaln_partials(ns, a, b, y):
    s = ns.digamma(a + b)
    return ns.digamma(a) - s, ns.digamma(b) - s


POLES = "the poles 0, -1, -2, ... are outside its domain"

unary("gammaln", math.lgamma, _scipy_or("gammaln", math.lgamma),
      lambda ns, x, y: ns.digamma(x), ufuncs=_sp("gammaln"), math=["lgamma"], chosen=POLES)
unary("gamma", math.gamma, _scipy_or("gamma", math.gamma),
      lambda ns, x, y: y * ns.digamma(x), ufuncs=_sp("gamma"), math=["gamma"], chosen=POLES)
unary("digamma", _scipy_float("digamma"), _scipy_array("digamma"),
      lambda ns, x, y: ns.polygamma(1, x), ufuncs=_sp("digamma") + _sp("psi"), chosen=POLES,
      needs=SCIPY)
unary("polygamma", _scipy_float("polygamma"), _scipy_array("polygamma"),
      lambda ns, n, x, y: ns.polygamma(n + 1, x), ufuncs=_sp("polygamma"), orders=1,
      chosen="the order n is an integer, not differentiable; " + POLES, needs=SCIPY)
binary("beta", _scipy_float("beta"), _scipy_array("beta"), _beta_partials, ufuncs=_sp("beta"),
       chosen=POLES, needs=SCIPY)
binary("betaln", _scipy_float("betaln"), _scipy_array("betaln"), _betaln_partials,
       ufuncs=_sp("betaln"), chosen=POLES, needs=SCIPY)
unary("erfinv", _scipy_float("erfinv"), _scipy_array("erfinv"),
      lambda ns, x, y: HALF_SQRT_PI * ns.exp(y * y), ufuncs=_sp("erfinv"),
      domain=Domain(-1.0, 1.0), edges=True, needs=SCIPY)
unary("erfcinv", _scipy_float("erfcinv"), _scipy_array("erfcinv"),
      lambda ns, x, y: -(HALF_SQRT_PI * ns.exp(y * y)), ufuncs=_sp("erfcinv"),
      domain=Domain(0.0, 2.0), edges=True, needs=SCIPY)
unary("ndtr", _scipy_float("ndtr"), _scipy_array("ndtr"),
      lambda ns, x, y: INV_SQRT_2PI * ns.exp(-0.5 * (x * x)), ufuncs=_sp("ndtr"), needs=SCIPY)
unary("log_ndtr", _scipy_float("log_ndtr"), _scipy_array("log_ndtr"),
      lambda ns, x, y: INV_SQRT_2PI * ns.exp(-0.5 * (x * x) - y), ufuncs=_sp("log_ndtr"),
      needs=SCIPY)
unary("ndtri", _scipy_float("ndtri"), _scipy_array("ndtri"),
      lambda ns, x, y: SQRT_2PI * ns.exp(0.5 * (y * y)), ufuncs=_sp("ndtri"),
      domain=Domain(0.0, 1.0), edges=True, needs=SCIPY)
unary("logit", logit_float, _scipy_or("logit", logit_float),
      lambda ns, x, y: ns.rdiv(1.0, x * (1.0 - x)), ufuncs=_sp("logit"),
      domain=Domain(0.0, 1.0), edges=True)
unary("log_expit", log_expit_float, _scipy_or("log_expit", log_expit_float),
      lambda ns, x, y: ns.sigmoid(-x), ufuncs=_sp("log_expit"))
binary("xlogy", xlogy_float, _scipy_or("xlogy", xlogy_float), _xlogy_partials,
       ufuncs=_sp("xlogy"), edges=True,
       chosen="d/dy 0 at (0, 0) (xlogy(0, y) is 0 for every y); d/dx log(y), -inf at y = 0")
binary("xlog1py", xlog1py_float, _scipy_or("xlog1py", xlog1py_float), _xlog1py_partials,
       ufuncs=_sp("xlog1py"), edges=True,
       chosen="d/dy 0 at (0, -1) (xlog1py(0, y) is 0 for every y); d/dx log1p(y), -inf at "
              "y = -1")
unary("entr", entr_float, _scipy_or("entr", entr_float),
      lambda ns, x, y: _guard_pos(ns, x, lambda u: -(ns.log(u) + 1.0), INF), ufuncs=_sp("entr"),
      domain=Domain(0.0, INF, True), chosen="+inf at 0 (the one-sided derivative)", edges=True)
unary("exp10", exp10_float, _scipy_or("exp10", exp10_float), lambda ns, x, y: y * LN10,
      ufuncs=_sp("exp10"))
unary("i0", _scipy_float("i0", True), _scipy_array("i0"), lambda ns, x, y: ns.i1(x),
      ufuncs=_sp("i0"), needs=SCIPY)
unary("i0e", _scipy_float("i0e"), _scipy_array("i0e"),
      lambda ns, x, y: ns.i1e(x) - ns.sign(x) * y, ufuncs=_sp("i0e"),
      chosen="0 at 0 (the mean of the one-sided derivatives -1 and 1)", needs=SCIPY)
unary("i1", _scipy_float("i1", True), _scipy_array("i1"),
      lambda ns, x, y: ns.i0(x) - _bessel_ratio(ns, x, y, False), ufuncs=_sp("i1"), needs=SCIPY)
unary("i1e", _scipy_float("i1e"), _scipy_array("i1e"),
      lambda ns, x, y: ns.i0e(x) - ns.sign(x) * y - _bessel_ratio(ns, x, y, False, True),
      ufuncs=_sp("i1e"), needs=SCIPY)
unary("j0", _scipy_float("j0"), _scipy_array("j0"), lambda ns, x, y: -ns.j1(x),
      ufuncs=_sp("j0"), needs=SCIPY)
unary("j1", _scipy_float("j1"), _scipy_array("j1"),
      lambda ns, x, y: ns.j0(x) - _bessel_ratio(ns, x, y, True), ufuncs=_sp("j1"), needs=SCIPY)
unary("y0", _scipy_float("y0"), _scipy_array("y0"), lambda ns, x, y: -ns.y1(x),
      ufuncs=_sp("y0"), domain=Domain(0.0), needs=SCIPY)
unary("y1", _scipy_float("y1"), _scipy_array("y1"), lambda ns, x, y: ns.y0(x) - ns.rdiv(y, x),
      ufuncs=_sp("y1"), domain=Domain(0.0), needs=SCIPY)


# Functions of a static order or parameter and a real: Bessel functions of real order (their
# x-derivatives are the recurrences), the incomplete gamma functions and their inverses (in the
# shape a too, to first order: that derivative has no closed form, deltaad.incomplete computes
# it), the exponential integrals.
REAL_ORDER = Order("v", integer=False, domain=REALS)
SHAPE = Order("a", integer=False, domain=Domain(0.0))
NO_ORDER = "no derivative in the first argument (static: a dual there is an error)"
IN_SHAPE = ("first derivative in the first argument, computed numerically (a second derivative "
            "involving it is an error)")
IN_SHAPES = IN_SHAPE.replace("the first argument", "the first two arguments")


def _bessel_step(ns, f, v, x, sign):
    """``(f(v - 1, x) + sign * f(v + 1, x)) / 2``: the derivative recurrences of Bessel
    functions."""
    return 0.5 * (f(v - 1.0, x) + sign * f(v + 1.0, x))


def _gamma_density(ns, a, x):
    """``x^(a-1) e^(-x) / Gamma(a)``, d/dx of ``gammainc(a, x)``: at ``x = 0`` its limit
    (+inf for a < 1, 1 for a = 1, 0 for a > 1), without evaluating ``log`` there."""
    at_zero = ns.where(a < 1.0, INF, ns.where(a == 1.0, 1.0, 0.0))
    lg = special("gammaln")(a)  # a is static: one value for every path (scalar or array)
    lg = lg if isinstance(a, np.ndarray) else float(lg)
    return _guard_pos(ns, x, lambda u: ns.exp((a - 1.0) * ns.log(u) - u - lg), at_zero)


def _beta_density(ns, a, b, x):
    """``x^(a-1) (1-x)^(b-1) / B(a, b)``, d/dx of ``betainc(a, b, x)``: at ``x = 0`` and
    ``x = 1`` its limits, without evaluating ``log`` there."""
    lb = special("betaln")(a, b)  # a, b are static: one value for every path
    lb = lb if isinstance(lb, np.ndarray) and lb.ndim else float(lb)
    xv = ns.value(x)
    inside = (xv > 0.0) & (xv < 1.0)
    t = ns.where(inside, x, 0.5)
    d = ns.exp((a - 1.0) * ns.log(t) + (b - 1.0) * ns.log1p(-t) - lb)
    edge = math.exp(-lb) if type(lb) is float else np.exp(-lb)  # 1 / B(a, b)

    def end(p):  # the limit at an end where the exponent of that end is p - 1
        return ns.where(p < 1.0, INF, ns.where(p == 1.0, edge, 0.0))

    return ns.where(inside, d, ns.where(xv == 0.0, end(a), ns.where(xv == 1.0, end(b), NAN)))


def _gammainc_shape(ns, a, x, y):
    """d/da of ``gammainc(a, x)`` (numerical: series or continued fraction, first order)."""
    return (incomplete.gammainc_da_of(a, x),)


def _gammaincinv_shape(ns, a, p, y):
    """d/da of the inverse ``y`` of ``gammainc(a, .)`` (or of ``gammaincc``: the same):
    ``-P_a / P_x`` at ``y`` (the implicit function theorem)."""
    return (-ns.rdiv(incomplete.gammainc_da_of(a, y), _gamma_density(ns, a, y)),)


def _betainc_shape(ns, a, b, x, y):
    """(d/da, d/db) of ``betainc(a, b, x)`` (numerical: continued fraction, first order)."""
    return incomplete.betainc_dab_of(a, b, x)


def _betaincinv_shape(ns, a, b, p, y):
    """(d/da, d/db) of the inverse ``y`` of ``betainc(a, b, .)`` (or ``betaincc``):
    ``-I_a / I_x`` and ``-I_b / I_x`` at ``y``."""
    d = _beta_density(ns, a, b, y)
    da, db = incomplete.betainc_dab_of(a, b, y)
    return -ns.rdiv(da, d), -ns.rdiv(db, d)


def _negated(shape):
    return lambda *args: tuple(-d for d in shape(*args))


def _expn_partial(ns, n, x, y):
    # d/dx E_n(x) = -E_{n-1}(x) for n >= 1; E_0(x) = e^-x / x, whose derivative is -y (1 + 1/x)
    first = ns.where(n >= 1, n, 1)
    return ns.where(n >= 1, -ns.expn(first - 1, x), -(y + ns.rdiv(y, x)))


_SPENCE_SERIES = 14  # terms of -sum u^k / (k + 1), u = 1 - x, used for |u| < 0.05


def _spence_partial(ns, x, y):
    """d/dx of scipy's ``spence(x) = int_1^x log(t) / (1 - t) dt``: ``log(x) / (1 - x)``, and
    near ``x = 1`` (where that is 0/0) its power series ``-sum (1 - x)^k / (k + 1)``."""
    xv = ns.value(x)
    near = abs(1.0 - xv) < 0.05
    ok = (xv > 0.0) & (abs(1.0 - xv) >= 0.05)
    u = 1.0 - ns.where(near, x, 1.0)  # each branch sees only the points it serves
    series = -1.0 / _SPENCE_SERIES
    for k in range(_SPENCE_SERIES - 2, -1, -1):
        series = series * u - 1.0 / (k + 1)
    t = ns.where(ok, x, 2.0)
    quotient = ns.log(t) / (1.0 - t)
    return ns.where(near, series, ns.where(ok, quotient, ns.where(xv == 0.0, -INF, NAN)))


unary("jv", _scipy_float("jv"), _scipy_array("jv"),
      lambda ns, v, x, y: _bessel_step(ns, ns.jv, v, x, -1.0), ufuncs=_sp("jv"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("yv", _scipy_float("yv"), _scipy_array("yv"),
      lambda ns, v, x, y: _bessel_step(ns, ns.yv, v, x, -1.0), ufuncs=_sp("yv"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("yn", _scipy_float("yn"), _scipy_array("yn"),
      lambda ns, n, x, y: 0.5 * (ns.yn(n - 1, x) - ns.yn(n + 1, x)), ufuncs=_sp("yn"),
      order=Order("n", integer=True, domain=REALS), domain=Domain(0.0), chosen=NO_ORDER,
      needs=SCIPY)
unary("iv", _scipy_float("iv", True), _scipy_array("iv"),
      lambda ns, v, x, y: _bessel_step(ns, ns.iv, v, x, 1.0), ufuncs=_sp("iv"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("ive", _scipy_float("ive"), _scipy_array("ive"),
      lambda ns, v, x, y: _bessel_step(ns, ns.ive, v, x, 1.0) - ns.sign(x) * y,
      ufuncs=_sp("ive"), order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("kv", _scipy_float("kv", True), _scipy_array("kv"),
      lambda ns, v, x, y: -_bessel_step(ns, ns.kv, v, x, 1.0), ufuncs=_sp("kv"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("kve", _scipy_float("kve", True), _scipy_array("kve"),
      lambda ns, v, x, y: y - _bessel_step(ns, ns.kve, v, x, 1.0), ufuncs=_sp("kve"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("gammainc", _scipy_float("gammainc"), _scipy_array("gammainc"),
      lambda ns, a, x, y: _gamma_density(ns, a, x), ufuncs=_sp("gammainc"), order=SHAPE,
      domain=Domain(0.0, INF, True), edges=True, needs=SCIPY, shape=_gammainc_shape,
      chosen=IN_SHAPE + "; at x = 0 the one-sided derivative (+inf for a < 1)")
unary("gammaincc", _scipy_float("gammaincc"), _scipy_array("gammaincc"),
      lambda ns, a, x, y: -_gamma_density(ns, a, x), ufuncs=_sp("gammaincc"), order=SHAPE,
      domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      shape=_negated(_gammainc_shape),
      chosen=IN_SHAPE + "; at x = 0 the one-sided derivative (-inf for a < 1)")
unary("gammaincinv", _scipy_float("gammaincinv"), _scipy_array("gammaincinv"),
      lambda ns, a, p, y: ns.rdiv(1.0, _gamma_density(ns, a, y)), ufuncs=_sp("gammaincinv"),
      order=SHAPE, domain=Domain(0.0, 1.0), edges=True, chosen=IN_SHAPE, needs=SCIPY,
      shape=_gammaincinv_shape)
unary("gammainccinv", _scipy_float("gammainccinv"), _scipy_array("gammainccinv"),
      lambda ns, a, q, y: -ns.rdiv(1.0, _gamma_density(ns, a, y)),
      ufuncs=_sp("gammainccinv"),
      order=SHAPE, domain=Domain(0.0, 1.0), edges=True, chosen=IN_SHAPE, needs=SCIPY,
      shape=_gammaincinv_shape)
unary("betainc", _scipy_float("betainc"), _scipy_array("betainc"),
      lambda ns, a, b, x, y: _beta_density(ns, a, b, x), ufuncs=_sp("betainc"),
      order=Order("a, b", integer=False, domain=Domain(0.0)), orders=2,
      domain=Domain(0.0, 1.0, True, True), edges=True, needs=SCIPY, shape=_betainc_shape,
      chosen=IN_SHAPES + "; at x = 0 and 1 the one-sided derivatives (+inf for a < 1, resp. "
      "b < 1)")
unary("betaincinv", _scipy_float("betaincinv"), _scipy_array("betaincinv"),
      lambda ns, a, b, p, y: ns.rdiv(1.0, _beta_density(ns, a, b, y)),
      ufuncs=_sp("betaincinv"), order=Order("a, b", integer=False, domain=Domain(0.0)),
      orders=2, domain=Domain(0.0, 1.0), edges=True, needs=SCIPY, shape=_betaincinv_shape,
      chosen=IN_SHAPES)
unary("expn", _scipy_float("expn"), _scipy_array("expn"), _expn_partial, ufuncs=_sp("expn"),
      order=Order("n"), domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("exp1", _scipy_float("exp1"), _scipy_array("exp1"),
      lambda ns, x, y: -ns.rdiv(ns.exp(-x), x), ufuncs=_sp("exp1"), domain=Domain(0.0),
      needs=SCIPY)
unary("expi", _scipy_float("expi"), _scipy_array("expi"),
      lambda ns, x, y: ns.rdiv(ns.exp(x), x), ufuncs=_sp("expi"), needs=SCIPY, edges=True,
      chosen="+inf at the pole 0 on arrays (expi is -inf there; on floats an error, as math)")
unary("erfcx", _scipy_float("erfcx", True), _scipy_array("erfcx"),
      lambda ns, x, y: 2.0 * (x * y) - TWO_OVER_SQRT_PI, ufuncs=_sp("erfcx"), needs=SCIPY)
unary("dawsn", _scipy_float("dawsn"), _scipy_array("dawsn"),
      lambda ns, x, y: 1.0 - 2.0 * (x * y), ufuncs=_sp("dawsn"), needs=SCIPY)
unary("spence", _scipy_float("spence"), _scipy_array("spence"), _spence_partial,
      ufuncs=_sp("spence"), domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      chosen="-inf at 0 (the one-sided derivative)")
unary("rgamma", _scipy_float("rgamma"), _scipy_array("rgamma"),
      lambda ns, x, y: -(y * ns.digamma(x)), ufuncs=_sp("rgamma"), needs=SCIPY,
      chosen="at 0, -1, -2, ... (zeros of rgamma, poles of digamma) none is computed: nan or "
             "an error on floats; the limit there is (-1)^n n!")


# The distributions' functions of scipy.special (scipy.stats's chi2, f, t and poisson are written
# with them), and scipy's companions of betainc and of numpy's functions. Their derivatives in
# the variable are densities; in the degrees of freedom, first derivatives through gammainc's
# and betainc's (numerical); the counts of pdtr/pdtrc are static (floored: piecewise constant).
DF = Order("v", integer=False, domain=Domain(0.0))
DFS = Order("dfn, dfd", integer=False, domain=Domain(0.0))
COUNT = Order("k", integer=False, domain=Domain(0.0, INF, True))
AB = Order("a, b", integer=False, domain=Domain(0.0))


def _static(f, *args):
    """``f(*args)`` on static parameters: an array for arrays of them, else a float (one value
    for every path, scalar or array)."""
    r = f(*args)
    return r if isinstance(r, np.ndarray) and r.ndim else float(r)


def _chi2_density(ns, v, x):
    """d/dx of ``chdtr(v, x) = gammainc(v / 2, x / 2)``."""
    return 0.5 * _gamma_density(ns, 0.5 * v, 0.5 * x)


def _f_log_norm(n, m):
    """log of the F density's constant ``n^(n/2) m^(m/2) / B(n/2, m/2)``."""
    a, b = 0.5 * np.asarray(n, dtype=float), 0.5 * np.asarray(m, dtype=float)
    with np.errstate(all="ignore"):
        return a * np.log(n) + b * np.log(m) - special("betaln")(a, b)


def _f_density(ns, n, m, x):
    """d/dx of ``fdtr(n, m, x)``, the F density ``c x^(n/2 - 1) (m + n x)^(-(n + m)/2)``, in
    logarithms (``1 - w`` of the beta form would cancel for large x); at ``x = 0`` its limit
    (+inf for n < 2), 0 at ``x = +inf``, nan below 0."""
    lc = _static(_f_log_norm, n, m)
    a, ab = 0.5 * n, 0.5 * (n + m)
    xv = ns.value(x)
    ok = (xv > 0.0) & (xv < INF)
    u = ns.where(ok, x, 1.0)
    d = ns.exp(lc + (a - 1.0) * ns.log(u) - ab * ns.log(m + n * u))
    edge = math.exp(lc - ab * math.log(m)) if type(lc) is float else np.exp(lc - ab * np.log(m))
    at_zero = ns.where(a < 1.0, INF, ns.where(a == 1.0, edge, 0.0))
    return ns.where(ok, d, ns.where(xv == 0.0, at_zero, ns.where(xv == INF, 0.0, NAN)))


def _t_log_norm(v):
    """log of the t density's constant ``Gamma((v+1)/2) / (sqrt(v pi) Gamma(v/2))`` (the
    normal's at ``v = inf``)."""
    gammaln = special("gammaln")
    with np.errstate(all="ignore"):
        va = np.asarray(v, dtype=float)
        finite = np.where(np.isinf(va), 1.0, va)
        c = gammaln(0.5 * (finite + 1.0)) - gammaln(0.5 * finite) - 0.5 * np.log(finite * math.pi)
        return np.where(np.isinf(va), -0.5 * math.log(2.0 * math.pi), c)


def _t_density(ns, v, t):
    """d/dt of ``stdtr(v, t)``: ``c (1 + t^2 / v)^(-(v + 1) / 2)``; the normal density for
    ``v = inf``."""
    lc = _static(_t_log_norm, v)
    inf = np.isinf(v) if isinstance(v, np.ndarray) else v == INF
    vf = np.where(inf, 1.0, v) if isinstance(v, np.ndarray) else (1.0 if inf else v)
    tt = t * t
    return ns.where(inf, ns.exp(lc - 0.5 * tt),
                    ns.exp(lc - (0.5 * (vf + 1.0)) * ns.log1p(tt / vf)))


def _poisson_shape(k):
    """``floor(k) + 1``: ``pdtr(k, m)`` is ``gammaincc(floor(k) + 1, m)``."""
    if isinstance(k, np.ndarray):
        return np.floor(k) + 1.0
    return float(math.floor(k)) + 1.0 if math.isfinite(k) else k + 1.0


def _chi2_shape(ns, v, x, y):
    """d/dv of ``chdtr(v, x) = gammainc(v / 2, x / 2)``."""
    return (0.5 * incomplete.gammainc_da_of(0.5 * v, 0.5 * x),)


def _chi2_inverse_shape(ns, v, p, y):
    """d/dv of ``chdtri(v, p)``, the ``x`` with ``chdtrc(v, x) = p``: ``-P_a / P_x`` at
    ``(v / 2, x / 2)``."""
    a, u = 0.5 * v, 0.5 * y
    return (-ns.rdiv(incomplete.gammainc_da_of(a, u), _gamma_density(ns, a, u)),)


def _t_dv(v, t):
    """d/dv of ``stdtr(v, t)``: ``stdtr = I_z(v/2, 1/2) / 2`` (``1 -`` that for t > 0) with
    ``z = v / (v + t^2)``; ``1 - z`` is computed as ``t^2 / (v + t^2)``, not by subtraction."""
    v, t = np.asarray(v, dtype=float), np.asarray(t, dtype=float)
    with np.errstate(all="ignore"):
        s = v + t * t
        z, w = v / s, t * t / s
        a = 0.5 * v
        ok = (t != 0) & np.isfinite(t) & np.isfinite(v) & (v > 0)
        zs, ws, vs, ss, as_ = (np.where(ok, q, 0.5) for q in (z, w, v, s, a))
        ia = incomplete.betainc_dab_of(as_, 0.5, zs, ws)[0]
        dens = np.exp((as_ - 1.0) * np.log(zs) + 0.5 * np.log(ws) - special("betaln")(as_, 0.5)
                      - np.log(ss))
        d = -0.5 * np.sign(t) * (0.5 * ia + dens)
        r = np.where(ok, d, np.where(np.isnan(v) | np.isnan(t) | (v <= 0), NAN, 0.0))
    return r if r.ndim else float(r)


def _f_dfs(n, m, x):
    """(d/dn, d/dm) of ``fdtr(n, m, x) = I_z(n/2, m/2)``, ``z = n x / (m + n x)`` (``1 - z =
    m / (m + n x)``): ``I_a / 2 + z^a w^b / (n B)`` and ``I_b / 2 - z^a w^b / (m B)``."""
    n, m, x = (np.asarray(q, dtype=float) for q in (n, m, x))
    with np.errstate(all="ignore"):
        s = m + n * x
        z, w = n * x / s, m / s
        ok = (x > 0) & np.isfinite(x) & (n > 0) & (m > 0) & np.isfinite(n) & np.isfinite(m)
        zs, ws, ns_, ms = (np.where(ok, q, 0.5) for q in (z, w, n, m))
        a, b = 0.5 * ns_, 0.5 * ms
        g = np.exp(a * np.log(zs) + b * np.log(ws) - special("betaln")(a, b))
        ia, ib = incomplete.betainc_dab_of(a, b, zs, ws)
        dn = 0.5 * ia + g / ns_
        dm = 0.5 * ib - g / ms
        bad = np.isnan(n) | np.isnan(m) | np.isnan(x) | (n <= 0) | (m <= 0) | (x < 0)
        fill = np.where(bad, NAN, 0.0)
        dn, dm = np.where(ok, dn, fill), np.where(ok, dm, fill)
    return (dn, dm) if dn.ndim else (float(dn), float(dm))


def _f_inverse_shape(ns, n, m, p, y):
    """(d/dn, d/dm) of ``fdtri(n, m, p)``: ``-F_n / F_x`` and ``-F_m / F_x`` at the quantile."""
    dn, dm = _f_dfs(n, m, y)
    d = _f_density(ns, n, m, y)
    return -ns.rdiv(dn, d), -ns.rdiv(dm, d)


def _powm1_partials(ns, x, p, y):
    """d/dx ``p x^p / x`` (also for negative x, where scipy's value is real: integer p), and
    at 0 its limit; d/dp ``x^p log(x)`` for x > 0 (0 at x = 0 for p > 0), nan for x < 0."""
    xv, pv = ns.value(x), ns.value(p)
    nonzero = xv != 0.0
    at_zero = ns.where(pv > 1.0, 0.0, ns.where(pv == 1.0, 1.0, ns.where(pv > 0.0, INF, NAN)))
    dx = ns.where(nonzero, p * (y + 1.0) / ns.where(nonzero, x, 1.0), at_zero)
    dp = _guard_pos(ns, x, lambda u: (y + 1.0) * ns.log(u), ns.where(pv > 0.0, 0.0, -INF))
    return dx, dp


def _poch_partials(ns, z, m, y):
    s = ns.digamma(z + m)
    return y * (s - ns.digamma(z)), y * s


unary("chdtr", _scipy_float("chdtr"), _scipy_array("chdtr"),
      lambda ns, v, x, y: _chi2_density(ns, v, x), ufuncs=_sp("chdtr"), order=DF,
      domain=Domain(0.0, INF, True), edges=True, needs=SCIPY, shape=_chi2_shape,
      chosen=IN_SHAPE + "; at x = 0 the one-sided derivative (+inf for v < 2)")
unary("chdtrc", _scipy_float("chdtrc"), _scipy_array("chdtrc"),
      lambda ns, v, x, y: -_chi2_density(ns, v, x), ufuncs=_sp("chdtrc"), order=DF,
      domain=Domain(0.0, INF, True), edges=True, needs=SCIPY, shape=_negated(_chi2_shape),
      chosen=IN_SHAPE + "; at x = 0 the one-sided derivative (-inf for v < 2)")
unary("chdtri", _scipy_float("chdtri"), _scipy_array("chdtri"),
      lambda ns, v, p, y: -ns.rdiv(1.0, _chi2_density(ns, v, y)), ufuncs=_sp("chdtri"),
      order=DF, domain=Domain(0.0, 1.0), edges=True, chosen=IN_SHAPE, needs=SCIPY,
      shape=_chi2_inverse_shape)
unary("fdtr", _scipy_float("fdtr"), _scipy_array("fdtr"),
      lambda ns, n, m, x, y: _f_density(ns, n, m, x), ufuncs=_sp("fdtr"), order=DFS, orders=2,
      domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      shape=lambda ns, n, m, x, y: _f_dfs(n, m, x), chosen=IN_SHAPES +
      "; at x = 0 the one-sided derivative (+inf for dfn < 2)")
unary("fdtrc", _scipy_float("fdtrc"), _scipy_array("fdtrc"),
      lambda ns, n, m, x, y: -_f_density(ns, n, m, x), ufuncs=_sp("fdtrc"), order=DFS,
      orders=2, domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      shape=lambda ns, n, m, x, y: tuple(-d for d in _f_dfs(n, m, x)), chosen=IN_SHAPES +
      "; at x = 0 the one-sided derivative (-inf for dfn < 2)")
unary("fdtri", _scipy_float("fdtri"), _scipy_array("fdtri"),
      lambda ns, n, m, p, y: ns.rdiv(1.0, _f_density(ns, n, m, y)), ufuncs=_sp("fdtri"),
      order=DFS, orders=2, domain=Domain(0.0, 1.0), edges=True, needs=SCIPY,
      shape=_f_inverse_shape, chosen=IN_SHAPES)
unary("stdtr", _scipy_float("stdtr"), _scipy_array("stdtr"),
      lambda ns, v, t, y: _t_density(ns, v, t), ufuncs=_sp("stdtr"), order=DF, chosen=IN_SHAPE,
      needs=SCIPY, shape=lambda ns, v, t, y: (_t_dv(v, t),))
unary("stdtrit", _scipy_float("stdtrit"), _scipy_array("stdtrit"),
      lambda ns, v, p, y: ns.rdiv(1.0, _t_density(ns, v, y)), ufuncs=_sp("stdtrit"),
      order=DF, domain=Domain(0.0, 1.0), edges=True, chosen=IN_SHAPE, needs=SCIPY,
      shape=lambda ns, v, p, y: (-ns.rdiv(_t_dv(v, y), _t_density(ns, v, y)),))
unary("pdtr", _scipy_float("pdtr"), _scipy_array("pdtr"),
      lambda ns, k, m, y: -_gamma_density(ns, _poisson_shape(k), m), ufuncs=_sp("pdtr"),
      order=COUNT, domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      chosen="no derivative in the count k (floored, as scipy: static); in the mean m "
             "-m^k e^-m / k!")
unary("pdtrc", _scipy_float("pdtrc"), _scipy_array("pdtrc"),
      lambda ns, k, m, y: _gamma_density(ns, _poisson_shape(k), m), ufuncs=_sp("pdtrc"),
      order=COUNT, domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      chosen="no derivative in the count k (floored, as scipy: static); in the mean m "
             "m^k e^-m / k!")
unary("betaincc", _scipy_float("betaincc"), _scipy_array("betaincc"),
      lambda ns, a, b, x, y: -_beta_density(ns, a, b, x), ufuncs=_sp("betaincc"), order=AB,
      orders=2, domain=Domain(0.0, 1.0, True, True), edges=True, needs=SCIPY,
      shape=_negated(_betainc_shape), chosen=IN_SHAPES +
      "; at x = 0 and 1 the one-sided derivatives (-inf for a < 1, resp. b < 1)")
unary("betainccinv", _scipy_float("betainccinv"), _scipy_array("betainccinv"),
      lambda ns, a, b, q, y: -ns.rdiv(1.0, _beta_density(ns, a, b, y)),
      ufuncs=_sp("betainccinv"), order=AB, orders=2, domain=Domain(0.0, 1.0), edges=True,
      needs=SCIPY, shape=_betaincinv_shape, chosen=IN_SHAPES)
unary("cosm1", _scipy_float("cosm1"), _scipy_array("cosm1"), lambda ns, x, y: -ns.sin(x),
      ufuncs=_sp("cosm1"), needs=SCIPY)
unary("ndtri_exp", _scipy_float("ndtri_exp"), _scipy_array("ndtri_exp"),
      lambda ns, x, y: SQRT_2PI * ns.exp(x + 0.5 * (y * y)), ufuncs=_sp("ndtri_exp"),
      domain=Domain(-INF, 0.0), edges=True, needs=SCIPY)
binary("powm1", _scipy_float("powm1", True), _scipy_array("powm1"), _powm1_partials,
       ufuncs=_sp("powm1"), edges=True, needs=SCIPY,
       chosen="at x = 0 the limits of p x^(p-1) (+inf for 0 < p < 1) and of x^p log(x) (0 "
              "for p > 0); d/dp nan for x < 0")
binary("poch", _scipy_float("poch", True), _scipy_array("poch"), _poch_partials,
       ufuncs=_sp("poch"), chosen=POLES, needs=SCIPY)

# scipy.special's versions of numpy's functions: the same entries, scipy's own values
for _name in ("log1p", "expm1", "exp2", "cbrt", "erf", "erfc"):
    _e = next(e for e in TABLE if e.name == _name)
    _e.ufuncs = tuple(dict.fromkeys(_e.ufuncs + tuple(_sp(_name))))
del _name, _e


# --------------------------------------------------------------------------------------------
# More of scipy.special: modified Bessel functions of integer order, losses and transforms,
# elliptic integrals, hypergeometric functions, orthogonal polynomials in x and the binomial,
# gamma and Kolmogorov distributions. Each derivative is written with the table's own
# functions, so it nests; degrees, counts and the parameters of hypergeometric functions are
# static (their derivatives have no closed form in scipy.special's functions).

INTEGER_ORDER = Order("n", integer=True, domain=REALS)
DEGREE = Order("n")  # an integer >= 0
DIEG = "the degree n is static (a dual there is an error)"


def _poly(ns, x, coefs):
    """``sum coefs[k] x^k`` by Horner's rule (a power series cut to rounding)."""
    s = coefs[-1]
    for c in reversed(coefs[:-1]):
        s = c + x * s
    return s


def _safe(ns, ok, x, at):
    """``x`` where ``ok``, else the harmless point ``at``: a branch ``ns.where`` does not take
    is still evaluated (and differentiated), so it must see no pole and no domain error."""
    return ns.where(ok, x, at)


# g(t) = (t e^t - expm1(t)) / t^2 = sum (k + 1) / (k + 2)! t^k: exprel's derivative, and the
# lambda-derivative of boxcox over log(x)^2; the series for |t| < 1/2, where the quotient
# cancels (0/0 at 0)
_G_SERIES = [(k + 1) / math.factorial(k + 2) for k in range(20)]


def _g(ns, t):
    tv = ns.value(t)
    small = abs(tv) < 0.5
    ts = _safe(ns, small, t, 0.0)
    tb = _safe(ns, small, 1.0, t)
    return ns.where(small, _poly(ns, ts, _G_SERIES),
                    (ns.exp(tb) * (tb - 1.0) + 1.0) / (tb * tb))


# h(u) = (u / (1 + u) - log1p(u)) / u^2 = sum_{k >= 2} (-1)^(k-1) (k - 1) / k u^(k-2): the
# lambda-derivative of inv_boxcox over y^2 x; the series for |u| < 1/10
_H_SERIES = [(-1.0) ** (k - 1) * (k - 1) / k for k in range(2, 20)]


def _h(ns, u):
    uv = ns.value(u)
    small = abs(uv) < 0.1
    us = _safe(ns, small, u, 0.0)
    ub = _safe(ns, small | (uv <= -1.0), 1.0, u)
    return ns.where(small, _poly(ns, us, _H_SERIES),
                    ns.where(uv > -1.0, (ub / (1.0 + ub) - ns.log1p(ub)) / (ub * ub), NAN))


def _boxcox_partials(ns, x, lm, y, log, power):
    """boxcox (``log``/``power`` = log, x) and boxcox1p (log1p, 1 + x): d/dx ``x^(lmbda-1)``,
    d/dlmbda ``log(x)^2 g(lmbda log(x))``; at the end of the domain (x = 0 for boxcox, -1
    for boxcox1p) the one-sided limits (+inf, 1 or 0 by lmbda in x; 1 / lmbda^2 for lmbda > 0
    in lmbda), nan beyond."""
    pv, lv = ns.value(power), ns.value(lm)
    inside = pv > 0.0
    xs = _safe(ns, inside, x, 0.0 if log is ns.log1p else 1.0)
    L = log(xs)
    dx = ns.exp((lm - 1.0) * L)
    dl = L * L * _g(ns, lm * L)
    end = pv == 0.0
    lpos = _safe(ns, lv > 0.0, lm, 1.0)
    dx_end = ns.where(lv < 1.0, INF, ns.where(lv == 1.0, 1.0, 0.0))
    dl_end = ns.where(lv > 0.0, ns.rdiv(1.0, lpos * lpos), NAN)
    return (ns.where(inside, dx, ns.where(end, dx_end, NAN)),
            ns.where(inside, dl, ns.where(end, dl_end, NAN)))


def _inv_boxcox_partials(ns, y, lm, x):
    """x = inv_boxcox(y, lmbda) = (1 + lmbda y)^(1/lmbda): d/dy ``x / (1 + lmbda y)``,
    d/dlmbda ``x y^2 h(lmbda y)``; nan where ``1 + lmbda y <= 0``."""
    u = lm * y
    ok = ns.value(u) > -1.0
    us = _safe(ns, ok, u, 0.0)
    return (ns.where(ok, x / (1.0 + us), NAN), ns.where(ok, x * (y * y) * _h(ns, us), NAN))


def _kl_partials(ns, x, y, v, rel):
    """kl_div (``rel`` False: ``x log(x/y) - x + y``) and rel_entr (``x log(x/y)``) for x, y > 0;
    at x = 0 (where the value is y, resp. 0, for y >= 0) d/dx is -inf (the one-sided limit of
    log x) and d/dy 1, resp. 0; nan elsewhere (the value is +inf there)."""
    xv, yv = ns.value(x), ns.value(y)
    both = (xv > 0.0) & (yv > 0.0)
    xs, ys = _safe(ns, both, x, 1.0), _safe(ns, both, y, 1.0)
    r = xs / ys
    dx = ns.log(r) + (1.0 if rel else 0.0)
    dy = -r if rel else 1.0 - r
    at0 = (xv == 0.0) & (yv >= 0.0)
    return (ns.where(both, dx, ns.where(at0, -INF, NAN)),
            ns.where(both, dy, ns.where(at0, 0.0 if rel else 1.0, NAN)))


def _huber_partials(ns, delta, r, y):
    """d/ddelta ``|r| - delta`` outside ``|r| <= delta`` (0 inside), d/dr ``r`` inside and
    ``delta sign(r)`` outside: both continuous at ``|r| = delta``; nan for delta < 0 (the value
    is +inf there)."""
    dv, rv = ns.value(delta), ns.value(r)
    inside = abs(rv) <= dv
    neg = dv < 0.0
    dd = ns.where(inside, 0.0, ns.absolute(r) - delta)
    dr = ns.where(inside, r, delta * ns.sign(r))
    return ns.where(neg, NAN, dd), ns.where(neg, NAN, dr)


def _pseudo_huber_partials(ns, delta, r, y):
    """With ``s = hypot(delta, r)``: d/dr ``delta r / s``, d/ddelta ``(s - delta)^2 / s``
    (written ``q (q / s)``, ``q = r^2 / (s + delta)``, which neither cancels nor underflows
    early); at delta = 0 (the value is 0 for every r) the one-sided limits 0 and ``|r|``, at
    the origin 0 and 0; nan for delta < 0."""
    dv, rv = ns.value(delta), ns.value(r)
    ok = (dv >= 0.0) & ((dv > 0.0) | (rv != 0.0))
    ds = _safe(ns, ok, delta, 1.0)
    s = ns.hypot(ds, r)
    q = r * (r / (s + ds))
    at0 = (dv == 0.0) & (rv == 0.0)
    return (ns.where(ok, q * (q / s), ns.where(at0, 0.0, NAN)),
            ns.where(ok, ds * (r / s), ns.where(at0, 0.0, NAN)))


_ERF_SERIES = [TWO_OVER_SQRT_PI * (-1.0) ** k / (math.factorial(k) * (2 * k + 1))
               for k in range(16)]


def _erf(ns, z):
    """erf with the same bits on every path (``ns.erf`` is ``math.erf`` on floats and scipy's
    on arrays): its power series for |z| < 1/2, ``2 ndtr(z sqrt 2) - 1`` (scipy's) beyond."""
    small = abs(ns.value(z)) < 0.5
    zs = _safe(ns, small, z, 0.0)
    return ns.where(small, zs * _poly(ns, zs * zs, _ERF_SERIES),
                    2.0 * ns.ndtr(math.sqrt(2.0) * z) - 1.0)


def _owens_t_partials(ns, h, a, y):
    """d/dh ``-phi(h) erf(a h / sqrt 2) / 2``, d/da ``exp(-h^2 (1 + a^2) / 2) / (2 pi (1 +
    a^2))`` (the integrand at a)."""
    dh = -(INV_SQRT_2PI * 0.5) * ns.exp(-0.5 * (h * h)) * _erf(ns, a * h * (1.0 / math.sqrt(2.0)))
    q = 1.0 + a * a
    da = ns.exp(-0.5 * (h * h) * q) / (2.0 * math.pi * q)
    return dh, da


def _binom_partials(ns, n, k, y):
    """binom(n, k) = Gamma(n + 1) / (Gamma(k + 1) Gamma(n - k + 1)): d/dn ``y (psi(n + 1) -
    psi(n - k + 1))``, d/dk ``y (psi(n - k + 1) - psi(k + 1))``."""
    s = ns.digamma(n - k + 1.0)
    return y * (ns.digamma(n + 1.0) - s), y * (s - ns.digamma(k + 1.0))


# K(m) = pi/2 sum c_j m^j, c_j = ((2j)! / (4^j j!^2))^2, and E(m) = pi/2 sum c_j m^j / (1 - 2j):
# their derivatives' series near m = 0, where the closed forms are 0/0
_C = [(math.factorial(2 * j) / (4.0 ** j * math.factorial(j) ** 2)) ** 2 for j in range(40)]
_DK_SERIES = [0.5 * math.pi * (j + 1) * _C[j + 1] for j in range(30)]
_DE_SERIES = [0.5 * math.pi * (j + 1) * _C[j + 1] / (1.0 - 2.0 * (j + 1)) for j in range(30)]
SMALL_M = 0.1


def _dellipk(ns, m):
    """dK/dm = ``(E - (1 - m) K) / (2 m (1 - m))``, its series for |m| < 0.1; +inf at m = 1."""
    mv = ns.value(m)
    small = abs(mv) < SMALL_M
    ok = ~small & (mv < 1.0) if isinstance(mv, np.ndarray) else (not small and mv < 1.0)
    ms = _safe(ns, small, m, 0.0)
    mb = _safe(ns, ok, m, 0.5)
    kb = ns.ellipk(mb)
    closed = (ns.ellipe(mb) - (1.0 - mb) * kb) / (2.0 * mb * (1.0 - mb))
    return ns.where(small, _poly(ns, ms, _DK_SERIES),
                    ns.where(ok, closed, ns.where(mv == 1.0, INF, NAN)))


def _dellipe(ns, m, E):
    """dE/dm = ``(E - K) / (2 m)``, its series for |m| < 0.1; -inf at m = 1."""
    mv = ns.value(m)
    small = abs(mv) < SMALL_M
    ok = ~small & (mv < 1.0) if isinstance(mv, np.ndarray) else (not small and mv < 1.0)
    ms = _safe(ns, small, m, 0.0)
    mb = _safe(ns, ok, m, 0.5)
    eb = _safe(ns, ok, E, 1.3506438810476755)
    return ns.where(small, _poly(ns, ms, _DE_SERIES),
                    ns.where(ok, (eb - ns.ellipk(mb)) / (2.0 * mb), ns.where(mv == 1.0, -INF, NAN)))


def _incomplete_elliptic(ns, phi, m):
    """The parts of the incomplete integrals' partials: ``Delta = sqrt(1 - m sin^2 phi)``, where
    it is real and positive (``ok``), and the points to evaluate at."""
    mv = ns.value(m)
    s = ns.sin(phi)
    dv = 1.0 - mv * ns.value(s) ** 2
    ok = dv > 0.0
    ms = _safe(ns, ok, m, 0.0)
    ps = _safe(ns, ok, phi, 0.0)
    sp = ns.sin(ps)
    delta = ns.sqrt(1.0 - ms * (sp * sp))
    return ok, ms, ps, delta


def _ellipkinc_partials(ns, phi, m, F):
    """d/dphi ``1 / Delta``; d/dm ``(E - (1 - m) F) / (2 m (1 - m)) - sin(2 phi) / (4 (1 - m)
    Delta)``, at m = 0 its limit ``(2 phi - sin 2 phi) / 8`` (near 0 it loses about
    log10(1/|m|) digits to cancellation); nan where ``m sin^2 phi >= 1`` or m = 1."""
    ok, ms, ps, delta = _incomplete_elliptic(ns, phi, m)
    mv = ns.value(ms)
    gen = ok & (mv != 0.0) & (mv != 1.0)
    mg = _safe(ns, gen, ms, 0.5)
    pg = _safe(ns, gen, ps, 0.5)
    sg = ns.sin(pg)
    dg = ns.sqrt(1.0 - mg * (sg * sg))
    Fg = ns.ellipkinc(pg, mg)
    dm = (ns.ellipeinc(pg, mg) - (1.0 - mg) * Fg) / (2.0 * mg * (1.0 - mg)) - \
        ns.sin(2.0 * pg) / (4.0 * (1.0 - mg) * dg)
    lim = (2.0 * ps - ns.sin(2.0 * ps)) / 8.0
    return (ns.where(ok, 1.0 / delta, NAN),
            ns.where(gen, dm, ns.where(ok & (mv == 0.0), lim, NAN)))


def _ellipeinc_partials(ns, phi, m, E):
    """d/dphi ``Delta``; d/dm ``(E - F) / (2 m)``, at m = 0 its limit ``-(2 phi - sin 2 phi) /
    8`` (near 0 it loses about log10(1/|m|) digits); nan where ``m sin^2 phi > 1``."""
    ok, ms, ps, delta = _incomplete_elliptic(ns, phi, m)
    mv = ns.value(ms)
    gen = ok & (mv != 0.0)
    mg = _safe(ns, gen, ms, 0.5)
    pg = _safe(ns, gen, ps, 0.5)
    dm = (ns.ellipeinc(pg, mg) - ns.ellipkinc(pg, mg)) / (2.0 * mg)
    lim = -(2.0 * ps - ns.sin(2.0 * ps)) / 8.0
    return (ns.where(ok, delta, NAN), ns.where(gen, dm, ns.where(ok & (mv == 0.0), lim, NAN)))


def _agm_partials(ns, a, b, M):
    """agm(a, b) = pi p / (2 K(m)), m = 1 - (q/p)^2, with p the larger of a, b in magnitude
    and q the other (of one sign): d/dq ``4 q M^2 K'(m) / (pi p^3)``, d/dp ``(M - q dM/dq) /
    p`` (M is homogeneous of degree 1); nan where a or b is 0 (or infinite) or their signs
    differ."""
    av, bv = ns.value(a), ns.value(b)
    ok = ((av > 0.0) & (bv > 0.0)) | ((av < 0.0) & (bv < 0.0))
    ok = ok & (abs(av) < INF) & (abs(bv) < INF)
    first = abs(av) >= abs(bv)
    P = _safe(ns, ok, ns.where(first, a, b), 1.0)
    Q = _safe(ns, ok, ns.where(first, b, a), 1.0)
    Ms = _safe(ns, ok, M, 1.0)
    r, u = Q / P, Ms / P  # (ratios: no power of a or b under- or overflows)
    m = (1.0 - r) * (1.0 + r)
    dq = (4.0 / math.pi) * r * (u * u) * _dellipk(ns, m)
    dp = u - r * dq
    return (ns.where(ok, ns.where(first, dp, dq), NAN), ns.where(ok, ns.where(first, dq, dp), NAN))


def _kolmogorov_partial(ns, y, v):
    """d/dy of the Kolmogorov survival function ``2 sum (-1)^(k-1) exp(-2 k^2 y^2)``: that
    series' derivative for y >= 0.8, the derivative of its theta-function form ``1 - sqrt(2
    pi) / y sum exp(-(2k-1)^2 pi^2 / (8 y^2))`` below; 0 for y < 0.04 (below 1e-300) and y <=
    0, where the function is 1."""
    yv = ns.value(y)
    big = yv >= 0.8
    mid = (yv >= 0.04) & (yv < 0.8)
    yb = _safe(ns, big, y, 1.0)
    yy = yb * yb
    alt = 0.0
    for k in range(1, 9):
        alt = alt + (-1.0) ** (k - 1) * (k * k) * ns.exp(-2.0 * (k * k) * yy)
    alt = -8.0 * yb * alt
    ym = _safe(ns, mid, y, 0.5)
    u = 1.0 / (ym * ym)
    theta = 0.0
    for k in range(1, 6):
        c = (2 * k - 1) ** 2 * math.pi ** 2 / 8.0
        theta = theta + ns.exp(-c * u) * (u - 2.0 * c * (u * u))
    theta = SQRT_2PI * theta
    return ns.where(big, alt, ns.where(mid, theta, ns.where(yv == yv, 0.0, NAN)))


def _degree_sum(ns, n, f, coef, x):
    """``sum coef(k) f(k, x)`` over the degrees ``k = n-1, n-3, ...`` (``coef`` None: every
    ``k < n``) -- the derivatives of Legendre's, Chebyshev's U and Laguerre's polynomials in
    their own integer-degree family (the same bits on every path; n may be an array)."""
    if isinstance(n, np.ndarray):
        if not np.all(n == np.floor(n)):  # (a float n on scalars is refused by order_of)
            raise TypeError("scipy.special.%s: deltaad differentiates it for integer degrees "
                            "n only (pass integers)" % f.__name__)
        top = int(np.max(n, initial=0))
    else:
        top = int(n)
    total = 0.0 * x
    for k in range(top):
        use = (k <= n - 1) & ((n - 1 - k) % 2 == 0) if coef else (k <= n - 1)
        c = coef(k) if coef else 1.0
        c = np.where(use, c, 0.0) if isinstance(use, np.ndarray) else (c if use else 0.0)
        total = total + c * f(k, x)
    return total


def _down(n):
    """``n - 1`` (the degree of the derivative's polynomial), and 0 where n is 0: a constant,
    whose derivative is 0 (the formulas' degree -1 is not evaluated)."""
    return np.where(n == 0, 0, n - 1) if isinstance(n, np.ndarray) else (n - 1 if n else 0)


def _bdtr_density(ns, k, n, p):
    """d/dp of ``bdtrc(k, n, p) = betainc(k + 1, n - k, p)`` (k floored, as scipy); 0 where k >=
    n or k < 0 (the function is 0 or 1 there)."""
    kf = np.floor(k) if isinstance(k, np.ndarray) else float(math.floor(k))
    live = (kf >= 0) & (kf < n) if isinstance(kf, np.ndarray) else 0 <= kf < n
    a = np.where(live, kf + 1.0, 1.0) if isinstance(kf, np.ndarray) else (kf + 1.0 if live else 1.0)
    b = np.where(live, n - kf, 1.0) if isinstance(kf, np.ndarray) else (n - kf if live else 1.0)
    return ns.where(live, _beta_density(ns, a, b, p), 0.0 * p)


def _nbdtr_density(ns, k, n, p):
    """d/dp of ``nbdtr(k, n, p) = betainc(n, k + 1, p)`` (k floored, as scipy)."""
    kf = np.floor(k) if isinstance(k, np.ndarray) else float(math.floor(k))
    return _beta_density(ns, n, kf + 1.0, p)


def _gdtr_density(ns, a, b, x):
    """d/dx of ``gdtr(a, b, x) = gammainc(b, a x)`` (a the rate, b the shape)."""
    return a * _gamma_density(ns, b, a * x)


RATE_SHAPE = Order("a, b", integer=False, domain=Domain(0.0))
TRIALS = Order("k, n", integer=True, domain=Domain(0.0, INF, True))
NB = Order("k, n", integer=True, domain=Domain(0.0))
ELL = "m <= 1: +inf at m = 1"

unary("k0", _scipy_float("k0", True), _scipy_array("k0"), lambda ns, x, y: -ns.k1(x),
      ufuncs=_sp("k0"), domain=Domain(0.0), needs=SCIPY)
unary("k1", _scipy_float("k1", True), _scipy_array("k1"),
      lambda ns, x, y: -(ns.k0(x) + ns.rdiv(y, x)), ufuncs=_sp("k1"), domain=Domain(0.0),
      needs=SCIPY)
unary("k0e", _scipy_float("k0e", True), _scipy_array("k0e"), lambda ns, x, y: y - ns.k1e(x),
      ufuncs=_sp("k0e"), domain=Domain(0.0), needs=SCIPY)
unary("k1e", _scipy_float("k1e", True), _scipy_array("k1e"),
      lambda ns, x, y: y - ns.k0e(x) - ns.rdiv(y, x), ufuncs=_sp("k1e"), domain=Domain(0.0),
      needs=SCIPY)
unary("kn", _scipy_float("kn", True), _scipy_array("kn"),
      lambda ns, n, x, y: -0.5 * (ns.kn(n - 1, x) + ns.kn(n + 1, x)), ufuncs=_sp("kn"),
      order=INTEGER_ORDER, domain=Domain(0.0), chosen=NO_ORDER, needs=SCIPY)
unary("jve", _scipy_float("jve"), _scipy_array("jve"),
      lambda ns, v, x, y: _bessel_step(ns, ns.jve, v, x, -1.0), ufuncs=_sp("jve"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER + "; jve is jv on reals",
      needs=SCIPY)
unary("yve", _scipy_float("yve"), _scipy_array("yve"),
      lambda ns, v, x, y: _bessel_step(ns, ns.yve, v, x, -1.0), ufuncs=_sp("yve"),
      order=REAL_ORDER, domain=Domain(0.0), chosen=NO_ORDER + "; yve is yv on reals",
      needs=SCIPY)

binary("kl_div", _scipy_float("kl_div"), _scipy_array("kl_div"),
       lambda ns, x, y, v: _kl_partials(ns, x, y, v, False), ufuncs=_sp("kl_div"), edges=True,
       needs=SCIPY, chosen="at x = 0 (y >= 0) d/dx -inf (the one-sided limit), d/dy 1; nan where "
                           "the value is +inf")
binary("rel_entr", _scipy_float("rel_entr"), _scipy_array("rel_entr"),
       lambda ns, x, y, v: _kl_partials(ns, x, y, v, True), ufuncs=_sp("rel_entr"), edges=True,
       needs=SCIPY, chosen="at x = 0 (y >= 0) d/dx -inf (the one-sided limit), d/dy 0; nan where "
                           "the value is +inf")
binary("huber", _scipy_float("huber"), _scipy_array("huber"), _huber_partials,
       ufuncs=_sp("huber"), needs=SCIPY,
       chosen="continuous where abs(r) = delta (both one-sided partials agree); nan for "
              "delta < 0")
binary("pseudo_huber", _scipy_float("pseudo_huber"), _scipy_array("pseudo_huber"),
       _pseudo_huber_partials, ufuncs=_sp("pseudo_huber"), needs=SCIPY,
       chosen="at delta = 0 d/ddelta abs(r) (one-sided), d/dr 0; both 0 at the origin; nan for "
              "delta < 0")
binary("boxcox", _scipy_float("boxcox"), _scipy_array("boxcox"),
       lambda ns, x, lm, y: _boxcox_partials(ns, x, lm, y, ns.log, x), ufuncs=_sp("boxcox"),
       edges=True, needs=SCIPY,
       chosen="at x = 0 the one-sided limits (d/dx +inf for lmbda < 1; d/dlmbda 1/lmbda^2)")
binary("boxcox1p", _scipy_float("boxcox1p"), _scipy_array("boxcox1p"),
       lambda ns, x, lm, y: _boxcox_partials(ns, x, lm, y, ns.log1p, 1.0 + x),
       ufuncs=_sp("boxcox1p"), edges=True, needs=SCIPY,
       chosen="at x = -1 the one-sided limits (d/dx +inf for lmbda < 1; d/dlmbda 1/lmbda^2)")
binary("inv_boxcox", _scipy_float("inv_boxcox", True), _scipy_array("inv_boxcox"),
       lambda ns, y, lm, x: _inv_boxcox_partials(ns, y, lm, x), ufuncs=_sp("inv_boxcox"),
       edges=True, needs=SCIPY, chosen="nan where 1 + lmbda y <= 0")
binary("inv_boxcox1p", _scipy_float("inv_boxcox1p", True), _scipy_array("inv_boxcox1p"),
       lambda ns, y, lm, x: _inv_boxcox_partials(ns, y, lm, x + 1.0),
       ufuncs=_sp("inv_boxcox1p"), edges=True, needs=SCIPY, chosen="nan where 1 + lmbda y <= 0")
unary("exprel", _scipy_float("exprel", True), _scipy_array("exprel"),
      lambda ns, x, y: _g(ns, x), ufuncs=_sp("exprel"), needs=SCIPY,
      chosen="1/2 at 0 (the limit; a power series near 0)")
unary("erfi", _scipy_float("erfi", True), _scipy_array("erfi"),
      lambda ns, x, y: TWO_OVER_SQRT_PI * ns.exp(x * x), ufuncs=_sp("erfi"), needs=SCIPY)
unary("loggamma", _scipy_float("loggamma"), _scipy_array("loggamma"),
      lambda ns, x, y: ns.digamma(x), ufuncs=_sp("loggamma"), domain=Domain(0.0),
      needs=SCIPY, chosen="real arguments only (scipy's loggamma is nan for x < 0)")
_DG = DEG2RAD
unary("sindg", _scipy_float("sindg"), _scipy_array("sindg"),
      lambda ns, x, y: _DG * ns.cosdg(x), ufuncs=_sp("sindg"), needs=SCIPY)
unary("cosdg", _scipy_float("cosdg"), _scipy_array("cosdg"),
      lambda ns, x, y: -(_DG * ns.sindg(x)), ufuncs=_sp("cosdg"), needs=SCIPY)
unary("tandg", _scipy_float("tandg", True), _scipy_array("tandg"),
      lambda ns, x, y: _DG * (1.0 + y * y), ufuncs=_sp("tandg"), needs=SCIPY,
      chosen="the poles 90 + 180 k are outside its domain")
unary("cotdg", _scipy_float("cotdg", True), _scipy_array("cotdg"),
      lambda ns, x, y: -(_DG * (1.0 + y * y)), ufuncs=_sp("cotdg"), needs=SCIPY,
      chosen="the poles 180 k are outside its domain")
binary("agm", _scipy_float("agm"), _scipy_array("agm"), _agm_partials, ufuncs=_sp("agm"),
       needs=SCIPY, chosen="nan where a or b is 0 (or infinite) or their signs differ")
binary("owens_t", _scipy_float("owens_t"), _scipy_array("owens_t"), _owens_t_partials,
       ufuncs=_sp("owens_t"), needs=SCIPY)
binary("binom", _scipy_float("binom", True), _scipy_array("binom"), _binom_partials,
       ufuncs=_sp("binom"), needs=SCIPY,
       chosen="Gamma's formula: nan where n + 1, k + 1 or n - k + 1 is a pole of digamma")

unary("ellipk", _scipy_float("ellipk", True), _scipy_array("ellipk"),
      lambda ns, m, y: _dellipk(ns, m), ufuncs=_sp("ellipk"), domain=Domain(-INF, 1.0),
      edges=True, needs=SCIPY, chosen="a power series for abs(m) < 0.1 (the closed form is 0/0 "
                                      "at 0)")
unary("ellipe", _scipy_float("ellipe"), _scipy_array("ellipe"),
      lambda ns, m, y: _dellipe(ns, m, y), ufuncs=_sp("ellipe"),
      domain=Domain(-INF, 1.0, False, True), edges=True, needs=SCIPY,
      chosen="-inf at m = 1 (the one-sided derivative); a power series for abs(m) < "
             "0.1")
unary("ellipkm1", _scipy_float("ellipkm1", True), _scipy_array("ellipkm1"),
      lambda ns, p, y: -_dellipk(ns, 1.0 - p), ufuncs=_sp("ellipkm1"), domain=Domain(0.0),
      edges=True, needs=SCIPY)
binary("ellipkinc", _scipy_float("ellipkinc", True), _scipy_array("ellipkinc"),
       _ellipkinc_partials, ufuncs=_sp("ellipkinc"), edges=True, needs=SCIPY,
       chosen="d/dm at m = 0 its limit (2 phi - sin 2 phi) / 8; nan where m sin^2 phi >= 1")
binary("ellipeinc", _scipy_float("ellipeinc"), _scipy_array("ellipeinc"),
       _ellipeinc_partials, ufuncs=_sp("ellipeinc"), edges=True, needs=SCIPY,
       chosen="d/dm at m = 0 its limit -(2 phi - sin 2 phi) / 8; nan where m sin^2 phi >= 1")

HYP = Order("a, b, c", integer=False, domain=REALS)
unary("hyp2f1", _scipy_float("hyp2f1", True), _scipy_array("hyp2f1"),
      lambda ns, a, b, c, z, y: (a * b / c) * ns.hyp2f1(a + 1.0, b + 1.0, c + 1.0, z),
      ufuncs=_sp("hyp2f1"), order=HYP, orders=3, domain=Domain(-INF, 1.0), needs=SCIPY,
      chosen="no derivative in a, b, c (static: a dual there is an error)")
unary("hyp1f1", _scipy_float("hyp1f1", True), _scipy_array("hyp1f1"),
      lambda ns, a, b, x, y: (a / b) * ns.hyp1f1(a + 1.0, b + 1.0, x), ufuncs=_sp("hyp1f1"),
      order=Order("a, b", integer=False, domain=REALS), orders=2, needs=SCIPY,
      chosen="no derivative in a, b (static: a dual there is an error)")
unary("hyp0f1", _scipy_float("hyp0f1", True), _scipy_array("hyp0f1"),
      lambda ns, v, z, y: ns.hyp0f1(v + 1.0, z) / v, ufuncs=_sp("hyp0f1"),
      order=Order("v", integer=False, domain=REALS), needs=SCIPY, chosen=NO_ORDER)

unary("eval_legendre", _scipy_float("eval_legendre", True), _scipy_array("eval_legendre"),
      lambda ns, n, x, y: _degree_sum(ns, n, ns.eval_legendre, lambda k: 2.0 * k + 1.0, x),
      ufuncs=_sp("eval_legendre"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_chebyt", _scipy_float("eval_chebyt", True), _scipy_array("eval_chebyt"),
      lambda ns, n, x, y: n * ns.eval_chebyu(_down(n), x), ufuncs=_sp("eval_chebyt"),
      order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_chebyu", _scipy_float("eval_chebyu", True), _scipy_array("eval_chebyu"),
      lambda ns, n, x, y: _degree_sum(ns, n, ns.eval_chebyu, lambda k: 2.0 * k + 2.0, x),
      ufuncs=_sp("eval_chebyu"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_hermite", _scipy_float("eval_hermite", True), _scipy_array("eval_hermite"),
      lambda ns, n, x, y: (2 * n) * ns.eval_hermite(_down(n), x), ufuncs=_sp("eval_hermite"),
      order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_hermitenorm", _scipy_float("eval_hermitenorm", True),
      _scipy_array("eval_hermitenorm"),
      lambda ns, n, x, y: n * ns.eval_hermitenorm(_down(n), x),
      ufuncs=_sp("eval_hermitenorm"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_laguerre", _scipy_float("eval_laguerre", True), _scipy_array("eval_laguerre"),
      lambda ns, n, x, y: -_degree_sum(ns, n, ns.eval_laguerre, None, x),
      ufuncs=_sp("eval_laguerre"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_chebyc", _scipy_float("eval_chebyc", True), _scipy_array("eval_chebyc"),
      lambda ns, n, x, y: n * ns.eval_chebys(_down(n), x), ufuncs=_sp("eval_chebyc"),
      order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_chebys", _scipy_float("eval_chebys", True), _scipy_array("eval_chebys"),
      lambda ns, n, x, y: _degree_sum(ns, n, ns.eval_chebys, lambda k: k + 1.0, x),
      ufuncs=_sp("eval_chebys"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_sh_legendre", _scipy_float("eval_sh_legendre", True),
      _scipy_array("eval_sh_legendre"),
      lambda ns, n, x, y: _degree_sum(ns, n, ns.eval_sh_legendre, lambda k: 4.0 * k + 2.0, x),
      ufuncs=_sp("eval_sh_legendre"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_sh_chebyt", _scipy_float("eval_sh_chebyt", True), _scipy_array("eval_sh_chebyt"),
      lambda ns, n, x, y: (2 * n) * ns.eval_sh_chebyu(_down(n), x),
      ufuncs=_sp("eval_sh_chebyt"), order=DEGREE, chosen=DIEG, needs=SCIPY)
unary("eval_sh_chebyu", _scipy_float("eval_sh_chebyu", True), _scipy_array("eval_sh_chebyu"),
      lambda ns, n, x, y: _degree_sum(ns, n, ns.eval_sh_chebyu, lambda k: 4.0 * k + 4.0, x),
      ufuncs=_sp("eval_sh_chebyu"), order=DEGREE, chosen=DIEG, needs=SCIPY)
DEG_ALPHA = Order("n, alpha", integer=False, domain=Domain(0.0, INF, True))
unary("eval_genlaguerre", _scipy_float("eval_genlaguerre", True),
      _scipy_array("eval_genlaguerre"),
      lambda ns, n, al, x, y: ns.where(n != 0, -ns.eval_genlaguerre(_down(n), al + 1.0, x),
                                       0.0 * x),
      ufuncs=_sp("eval_genlaguerre"), order=DEG_ALPHA, orders=2, chosen=DIEG, needs=SCIPY)
unary("eval_gegenbauer", _scipy_float("eval_gegenbauer", True),
      _scipy_array("eval_gegenbauer"),
      lambda ns, n, al, x, y: ns.where(n != 0, (2.0 * al) * ns.eval_gegenbauer(
          _down(n), al + 1.0, x), 0.0 * x),
      ufuncs=_sp("eval_gegenbauer"), order=DEG_ALPHA, orders=2, chosen=DIEG, needs=SCIPY)
unary("eval_jacobi", _scipy_float("eval_jacobi", True), _scipy_array("eval_jacobi"),
      lambda ns, n, al, be, x, y: ns.where(n != 0, (0.5 * (n + al + be + 1.0)) * ns.eval_jacobi(
          _down(n), al + 1.0, be + 1.0, x), 0.0 * x),
      ufuncs=_sp("eval_jacobi"), order=Order("n, alpha, beta", integer=False,
                                             domain=Domain(0.0, INF, True)),
      orders=3, chosen=DIEG, needs=SCIPY)
unary("lpmv", _scipy_float("lpmv", True), _scipy_array("lpmv"),
      lambda ns, m, v, x, y: -ns.rdiv(v * x * y - (v + m) * ns.lpmv(m, v - 1.0, x),
                                      1.0 - x * x),
      ufuncs=_sp("lpmv"), order=Order("m, v", integer=False, domain=REALS), orders=2,
      domain=Domain(-1.0, 1.0), needs=SCIPY,
      chosen="no derivative in m, v (static); the ends -1 and 1 are outside its domain")

unary("gdtr", _scipy_float("gdtr"), _scipy_array("gdtr"),
      lambda ns, a, b, x, y: _gdtr_density(ns, a, b, x), ufuncs=_sp("gdtr"), order=RATE_SHAPE,
      orders=2, domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      chosen=NO_ORDER.replace("argument", "two arguments") +
      "; at x = 0 the one-sided derivative (+inf for b < 1)")
unary("gdtrc", _scipy_float("gdtrc"), _scipy_array("gdtrc"),
      lambda ns, a, b, x, y: -_gdtr_density(ns, a, b, x), ufuncs=_sp("gdtrc"),
      order=RATE_SHAPE, orders=2, domain=Domain(0.0, INF, True), edges=True, needs=SCIPY,
      chosen=NO_ORDER.replace("argument", "two arguments") +
      "; at x = 0 the one-sided derivative (-inf for b < 1)")
unary("gdtrix", _scipy_float("gdtrix"), _scipy_array("gdtrix"),
      lambda ns, a, b, p, y: ns.rdiv(1.0, _gdtr_density(ns, a, b, y)), ufuncs=_sp("gdtrix"),
      order=RATE_SHAPE, orders=2, domain=Domain(0.0, 1.0), edges=True, needs=SCIPY,
      chosen=NO_ORDER.replace("argument", "two arguments"))
unary("bdtr", _scipy_float("bdtr"), _scipy_array("bdtr"),
      lambda ns, k, n, p, y: -_bdtr_density(ns, k, n, p), ufuncs=_sp("bdtr"), order=TRIALS,
      orders=2, domain=Domain(0.0, 1.0, True, True), edges=True, needs=SCIPY,
      chosen="no derivative in k, n (counts: static); in p the one-sided derivatives at 0 and 1")
unary("bdtrc", _scipy_float("bdtrc"), _scipy_array("bdtrc"),
      lambda ns, k, n, p, y: _bdtr_density(ns, k, n, p), ufuncs=_sp("bdtrc"), order=TRIALS,
      orders=2, domain=Domain(0.0, 1.0, True, True), edges=True, needs=SCIPY,
      chosen="no derivative in k, n (counts: static); in p the one-sided derivatives at 0 and 1")
unary("bdtri", _scipy_float("bdtri"), _scipy_array("bdtri"),
      lambda ns, k, n, q, p: -ns.rdiv(1.0, _bdtr_density(ns, k, n, p)), ufuncs=_sp("bdtri"),
      order=TRIALS, orders=2, domain=Domain(0.0, 1.0), edges=True, needs=SCIPY,
      chosen="no derivative in k, n (counts: static)")
unary("nbdtr", _scipy_float("nbdtr"), _scipy_array("nbdtr"),
      lambda ns, k, n, p, y: _nbdtr_density(ns, k, n, p), ufuncs=_sp("nbdtr"), order=NB,
      orders=2, domain=Domain(0.0, 1.0, True, True), edges=True, needs=SCIPY,
      chosen="no derivative in k, n (counts: static); in p the one-sided derivatives at 0 and 1")
unary("nbdtrc", _scipy_float("nbdtrc"), _scipy_array("nbdtrc"),
      lambda ns, k, n, p, y: -_nbdtr_density(ns, k, n, p), ufuncs=_sp("nbdtrc"), order=NB,
      orders=2, domain=Domain(0.0, 1.0, True, True), edges=True, needs=SCIPY,
      chosen="no derivative in k, n (counts: static); in p the one-sided derivatives at 0 and 1")
unary("nbdtri", _scipy_float("nbdtri"), _scipy_array("nbdtri"),
      lambda ns, k, n, q, p: ns.rdiv(1.0, _nbdtr_density(ns, k, n, p)), ufuncs=_sp("nbdtri"),
      order=NB, orders=2, domain=Domain(0.0, 1.0), edges=True, needs=SCIPY,
      chosen="no derivative in k, n (counts: static)")
unary("kolmogorov", _scipy_float("kolmogorov"), _scipy_array("kolmogorov"),
      _kolmogorov_partial, ufuncs=_sp("kolmogorov"), needs=SCIPY,
      chosen="0 for y <= 0 (the function is 1 there)")
unary("kolmogi", _scipy_float("kolmogi", True), _scipy_array("kolmogi"),
      lambda ns, p, y: -ns.rdiv(1.0, -_kolmogorov_partial(ns, y, p)), ufuncs=_sp("kolmogi"),
      domain=Domain(0.0, 1.0, False, True), edges=True, needs=SCIPY,
      chosen="-inf at p = 1 (kolmogi is 0 there, where kolmogorov is flat)")

BY_NAME = {e.name: e for e in TABLE}
