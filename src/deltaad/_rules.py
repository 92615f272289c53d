"""Derivative rules of the elementary functions, written once for both backends.

``unary_rules(ns)`` maps a name to ``(value on floats, derivative(x, y))`` where ``y`` is the
value at ``x``. The derivative is written with the backend's own functions (looked up in the
backend's namespace ``ns`` at call time), so on a dual of a lower level it is recorded there and
can be differentiated again. The pure backend uses these rules for floats too; the compiled core
has a C copy of each float formula for speed, and the tests hold the two to the same bits.
"""

import math

INF = math.inf
NAN = math.nan
LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def sigmoid_float(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def softplus_float(x):
    return math.log1p(math.exp(-abs(x))) + (x if x > 0.0 else 0.0)


def logaddexp_float(a, b):
    m = a if a > b else b
    if m == -INF:
        return -INF
    return m + math.log1p(math.exp(-abs(a - b)))


def float_pow(a, b):
    """``a ** b`` as Python computes it for floats, but a ValueError instead of a complex."""
    if a < 0.0 and b != math.floor(b) and math.isfinite(b):
        raise ValueError(
            "math domain error: a negative number raised to a non-integer power has no real "
            "value (got %r ** %r)" % (a, b)
        )
    return a ** b


def ieee_pow(a, b):
    """``a ** b`` inside a derivative: IEEE infinity where Python would raise (a zero base to
    a negative power, or a result too large for a float)."""
    if a == 0.0 and b < 0.0:
        return INF
    try:
        return a ** b
    except OverflowError:
        odd = b == math.floor(b) and math.fmod(b, 2.0) != 0.0
        return -INF if a < 0.0 and odd else INF


def pow_rules(ns):
    """``(ipow, pow_da)`` over the backend namespace ``ns``.

    ``pow_da(a, b)`` is the partial ``d/da a**b = b * a**(b - 1)``: 0 when ``b`` is the constant
    0 and ``a == 0`` (``a**0`` is 1 everywhere; ``0 * inf`` would give nan there), and IEEE
    infinity at ``a == 0`` with ``b < 1`` -- also when ``a`` is a dual of an outer
    differentiation (``ipow``), so that second derivatives at 0 do not raise.
    """

    def ipow(a, b):
        if type(a) is float and type(b) is float:
            return ieee_pow(a, b)
        strip = ns["strip"]
        if strip(a) == 0.0 and strip(b) < 0.0:
            return ns["lift"]([a, b], ieee_pow, lambda u, v: (pow_da(u, v), 0.0))
        return a ** b

    def pow_da(a, b):
        if ns["strip"](b) == 0.0 and ns["strip"](a) == 0.0:
            # a**0 is 1 everywhere: 0, not 0 * inf; also when b is a dual of an outer
            # differentiation, so nesting does not change this value. Elsewhere
            # b * a**(b-1) is a signed zero, kept as it is.
            return 0.0
        return b * ipow(a, b - 1.0)

    return ipow, pow_da


def unary_rules(ns):
    """The unary elementary functions over the backend namespace ``ns``."""

    def f(name):
        return ns[name]

    def rdiv(a, b):
        """``a / b``, IEEE (inf or nan, never raising) when ``b`` is a float zero.

        Every divisor here is a square root or a square, >= 0 in exact arithmetic: a -0.0 is
        an artefact of signed zeros (``sqrt(-0.0)``), so the result takes the sign of ``a``
        only (``grad(sqrt)(-0.0)`` is +inf, as for ``x ** 0.5``).
        """
        if type(b) is float and b == 0.0:
            sa = f("strip")(a)
            if sa == 0.0 or sa != sa:
                return NAN
            return math.copysign(INF, sa)
        if f("strip")(b) == 0.0:
            # ``b`` is a dual (of an outer differentiation) at zero: this derivative at the edge
            # of a domain is itself being differentiated (e.g. sqrt'' at 0). Divide as a
            # primitive whose value and partials are IEEE too, instead of raising.
            return f("lift")([a, b], rdiv, lambda u, v: (rdiv(1.0, v), -rdiv(rdiv(u, v), v)))
        return a / b

    def sign_of(x):
        s = f("strip")(x)
        return 1.0 if s > 0.0 else (-1.0 if s < 0.0 else (0.0 if s == 0.0 else NAN))

    return {
        "sin": (math.sin, lambda x, y: f("cos")(x)),
        "cos": (math.cos, lambda x, y: -f("sin")(x)),
        "tan": (math.tan, lambda x, y: 1.0 + y * y),
        "arcsin": (math.asin, lambda x, y: rdiv(1.0, f("sqrt")(1.0 - x * x))),
        "arccos": (math.acos, lambda x, y: -rdiv(1.0, f("sqrt")(1.0 - x * x))),
        "arctan": (math.atan, lambda x, y: 1.0 / (1.0 + x * x)),
        "sinh": (math.sinh, lambda x, y: f("cosh")(x)),
        "cosh": (math.cosh, lambda x, y: f("sinh")(x)),
        "tanh": (math.tanh, lambda x, y: 1.0 - y * y),
        "arcsinh": (math.asinh, lambda x, y: 1.0 / f("sqrt")(x * x + 1.0)),
        "arccosh": (math.acosh, lambda x, y: rdiv(1.0, f("sqrt")(x * x - 1.0))),
        "arctanh": (math.atanh, lambda x, y: 1.0 / (1.0 - x * x)),
        "exp": (math.exp, lambda x, y: y),
        "expm1": (math.expm1, lambda x, y: y + 1.0),
        "exp2": (math.exp2, lambda x, y: y * LN2),
        "log": (math.log, lambda x, y: 1.0 / x),
        "log1p": (math.log1p, lambda x, y: 1.0 / (1.0 + x)),
        "log2": (math.log2, lambda x, y: 1.0 / (x * LN2)),
        "log10": (math.log10, lambda x, y: 1.0 / (x * LN10)),
        "sqrt": (math.sqrt, lambda x, y: rdiv(0.5, y)),
        "cbrt": (math.cbrt, lambda x, y: rdiv(1.0, 3.0 * (y * y))),
        "absolute": (abs, lambda x, y: sign_of(x)),
        "erf": (math.erf, lambda x, y: TWO_OVER_SQRT_PI * f("exp")(-(x * x))),
        "erfc": (math.erfc, lambda x, y: -(TWO_OVER_SQRT_PI * f("exp")(-(x * x)))),
        "sigmoid": (sigmoid_float, lambda x, y: y * (1.0 - y)),
        "softplus": (softplus_float, lambda x, y: f("sigmoid")(x)),
    }


def binary_rules(ns):
    """name -> (value on floats, partials(a, b, y) -> (da, db)) for the binary primitives."""

    def f(name):
        return ns[name]

    def atan2_partials(y, x, v):
        r = x * x + y * y
        if f("strip")(r) == 0.0:  # undefined at the origin: nan, like 0/0
            return NAN, NAN
        return x / r, -y / r

    def hypot_partials(a, b, h):
        if f("strip")(h) == 0.0:  # not differentiable at the origin; 0 is a subgradient
            return 0.0, 0.0
        return a / h, b / h

    def logaddexp_partials(a, b, y):
        return f("exp")(a - y), f("exp")(b - y)

    return {
        "arctan2": (math.atan2, atan2_partials),
        "hypot": (math.hypot, hypot_partials),
        "logaddexp": (logaddexp_float, logaddexp_partials),
    }
