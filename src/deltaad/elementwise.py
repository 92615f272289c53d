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
"""

import math

import numpy as np

INF = math.inf
NAN = math.nan
LN2 = math.log(2.0)
LN10 = math.log(10.0)
LOG2E = 1.0 / LN2
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
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
      arrays, as the scalar paths do).
    """

    __slots__ = ("name", "arity", "float", "array", "ufuncs", "math", "derivative", "domain",
                 "chosen", "edges")

    def __init__(self, name, arity, float_impl, array, ufuncs, math_names, derivative, domain,
                 chosen, edges):
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

    def __repr__(self):
        return "<elementary %s>" % self.name


TABLE = []


def _entry(arity, name, float_impl, array, derivative, *, ufuncs=None, math=(), domain=REALS,
           chosen="", edges=False):
    if ufuncs is None:
        ufuncs = (array,) if isinstance(array, np.ufunc) else ()
    e = Elementary(name, arity, float_impl, array, tuple(ufuncs), tuple(math), derivative,
                   domain, chosen, edges)
    TABLE.append(e)
    return e


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
                box.append(np.vectorize(fallback, otypes=[float]))
        x = np.asarray(x)
        r = box[0](x)
        return r.astype(x.dtype) if x.dtype.kind == "f" and r.dtype != x.dtype else r

    impl.__name__ = name
    return impl


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


binary("arctan2", math.atan2, np.arctan2, _arctan2_partials, math=["atan2"],
       chosen="nan at (0, 0)")
binary("hypot", math.hypot, np.hypot, _hypot_partials, math=["hypot"], chosen="(0, 0) at (0, 0)")
binary("logaddexp", logaddexp_float, np.logaddexp,
       lambda ns, a, b, y: (ns.exp(a - y), ns.exp(b - y)))
binary("logaddexp2", logaddexp2_float, np.logaddexp2,
       lambda ns, a, b, y: (ns.exp2(a - y), ns.exp2(b - y)))

BY_NAME = {e.name: e for e in TABLE}
