"""``deltaad.math``: Python's ``math`` module, differentiable -- ``from deltaad import math``.

Every name of ``math`` is here. On plain numbers each function *is* ``math``'s (the same
result to the bit, the same errors); on duals it is differentiated:

- the elementary functions (``sin``, ``exp``, ``atan2``, ``erf``...) are the elementwise
  table's entries under their ``math`` names (:mod:`deltaad.elementwise`), with the values it
  chooses where they are not differentiable;
- ``hypot`` and ``dist`` of any number of coordinates, ``fsum``, ``prod``, ``sumprod``,
  ``fma``, ``copysign``, ``fmod``, ``remainder``, ``ldexp``, ``frexp``, ``modf``, ``pow``,
  ``log(x, base)``, ``gamma`` and ``lgamma`` are primitives of n reals (the general primitive
  of Krawiec et al.), their partials written with these same functions, so they differentiate
  again;
- what is piecewise constant or not a real function -- ``floor``, ``ceil``, ``trunc``,
  ``isnan``, ``isfinite``, ``isinf``, ``isclose``, ``ulp``, and the integer functions
  (``factorial``, ``comb``, ``gcd``...) -- works on the value: a plain result, derivative 0.

The values chosen where a function is not differentiable are listed in ``CHOSEN``. A
``deltaad.cmath`` for complex numbers follows the same layout.
"""

import functools as _functools
from ._plainmath import math as _math
import operator as _operator

from ._backend import B as _B
from ._errors import escaped_error as _escaped_error
from . import elementwise as _table
from .trace import is_dual as _is_dual
from .trace import recorders as _recorders

_Dual = _B.Dual
_lift = _B.lift

pi = _math.pi
e = _math.e
tau = _math.tau
inf = _math.inf
nan = _math.nan

CHOSEN = {
    "hypot": "0 for every coordinate at the origin (a subgradient)",
    "dist": "0 for every coordinate where the points coincide (a subgradient)",
    "copysign": "d/dx copysign(x, y) = sign(x) * sign of y, 0 at x == 0; 0 with respect to y",
    "fmod": "partials 1 and -trunc(x / y): the jumps get derivative 0",
    "remainder": "partials 1 and -n, n the integer nearest x / y: the jumps get derivative 0",
    "nextafter": "derivative 1 with respect to x, 0 with respect to y (it is x moved by an ulp)",
    "modf": "the fractional part has derivative 1, the integer part 0",
    "frexp": "the mantissa has derivative 2**-e (e constant); the exponent is a plain int",
    "floor, ceil, trunc, isnan, isinf, isfinite, isclose, ulp": "on the value: derivative 0",
}


def _open_value(x):
    """The plain value of ``x``, raising for a dual whose differentiation has finished."""
    while _is_dual(x):
        if x.trace.closed:
            raise _escaped_error(x.trace.level)
        x = x.value
    return x


def _scalar(name, x):
    """``x`` as a scalar operand: a 0-d array dual becomes its scalar dual; an array dual of
    another shape is refused, as ``math`` refuses arrays."""
    if type(x) is _Dual or not _is_dual(x):
        return x
    if x.ndim == 0:
        return x[()]
    raise TypeError(
        "deltaad.math.%s takes real numbers, as math.%s does; got an array dual of shape %s. "
        "Use numpy's functions on arrays (np.sin(x) ...)." % (name, name, x.shape)
    )


def _has_dual(xs):
    for x in xs:
        if _is_dual(x):
            return True
    return False


def _named(name, fn, doc):
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = doc
    return fn


# --------------------------------------------------------------------------------------------
# 1. The elementwise table's functions, under their math names


def _unary(name, dual_fn, math_fn):
    def fn(x):
        tx = type(x)
        if tx is float:
            return math_fn(x)
        if tx is _Dual:
            return dual_fn(x)
        if _is_dual(x):
            return dual_fn(_scalar(name, x))
        if tx in _recorders:  # deltaad.compile's recording number: recorded, not a guard
            return dual_fn(x)
        return math_fn(x)

    return _named(name, fn, "``math.%s``, differentiable on duals." % name)


def _binary(name, dual_fn, math_fn):
    def fn(a, b):
        ta = type(a)
        tb = type(b)
        if ta is float and tb is float:
            return math_fn(a, b)
        if ta is _Dual or tb is _Dual or _is_dual(a) or _is_dual(b):
            return dual_fn(_scalar(name, a), _scalar(name, b))
        if ta in _recorders or tb in _recorders:
            return dual_fn(a, b)
        return math_fn(a, b)

    return _named(name, fn, "``math.%s``, differentiable on duals." % name)


for _e in _table.TABLE:
    for _m in _e.math:
        if hasattr(_math, _m):  # the core makes it a builtin with a C fast path for float duals
            _plain_fn = getattr(_math, _m)
            _make, _sig = (_unary, "(x, /)") if _e.arity == 1 else (_binary, "(a, b, /)")
            globals()[_m] = _B.math_function(_m, _e.name, _plain_fn,
                                             _make(_m, getattr(_B, _e.name), _plain_fn), _sig)
del _e, _m, _plain_fn, _make, _sig


# --------------------------------------------------------------------------------------------
# 2. Functions of the value: piecewise constant, predicates, integer functions


def _on_value(name):
    math_fn = getattr(_math, name)

    def fn(*args, **kwargs):
        if _has_dual(args) or _has_dual(kwargs.values()):
            args = [_open_value(_scalar(name, a)) for a in args]
            kwargs = {k: _open_value(_scalar(name, v)) for k, v in kwargs.items()}
        return math_fn(*args, **kwargs)

    return _named(name, fn, "``math.%s`` on the value of a dual (a plain result, derivative "
                            "0)." % name)


for _m in ("floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "isclose", "ulp",
           "factorial", "comb", "perm", "gcd", "lcm", "isqrt"):
    if hasattr(_math, _m):
        globals()[_m] = _on_value(_m)
del _m


def _by_comparisons(name, test):
    """``name`` (a predicate ``_on_value`` made) written with comparisons for deltaad.compile's
    recording numbers: each comparison is a guard on its outcome, where the predicate of the
    value would be a guard on the value itself (a new recording for every input)."""
    on_value = globals()[name]

    def fn(x):
        v = _open_value(_scalar(name, x)) if _is_dual(x) else x
        if type(v) in _recorders:  # (a dual of a gradient recording holds one as its value)
            return test(v)
        return on_value(x)

    return _named(name, fn, on_value.__doc__)


isnan = _by_comparisons("isnan", lambda x: x != x)
isinf = _by_comparisons("isinf", lambda x: x == _math.inf or x == -_math.inf)
isfinite = _by_comparisons("isfinite", lambda x: x == x and x != _math.inf and x != -_math.inf)


# --------------------------------------------------------------------------------------------
# 3. Primitives of n reals (value from math, partials written with these functions)


def _primitive(name, operands, partials):
    """``name`` applied to ``operands`` (some duals) as one primitive: its value is this
    module's ``name`` on the operands' values one level down (``math``'s at the bottom)."""
    fn = globals()[name]
    return _lift([_scalar(name, x) for x in operands], fn, partials)


def log(x, base=None):
    """``math.log(x[, base])``, differentiable on duals."""
    if base is None:
        if type(x) is float:
            return _math.log(x)
        if _is_dual(x) or type(x) in _recorders:
            return _B.log(_scalar("log", x))
        return _math.log(x)
    if not (_is_dual(x) or _is_dual(base)):
        return _math.log(x, base)
    _math.log(_open_value(_scalar("log", x)), _open_value(_scalar("log", base)))  # math's errors
    return _B.log(_scalar("log", x)) / _B.log(_scalar("log", base))


log = _B.math_function("log", "log", _math.log, log, "(x, base=None, /)")


def hypot(*coordinates):
    """``math.hypot(*coordinates)``, differentiable on duals (0 at the origin)."""
    if not _has_dual(coordinates):
        return _math.hypot(*coordinates)
    if len(coordinates) == 2:
        return _B.hypot(_scalar("hypot", coordinates[0]), _scalar("hypot", coordinates[1]))

    def partials(*vs):
        h = hypot(*vs)
        if _open_value(h) == 0.0:
            return (0.0,) * len(vs)
        return tuple(v / h for v in vs)

    return _primitive("hypot", coordinates, partials)


hypot = _B.math_function("hypot", "hypot", _math.hypot, hypot, "(*coordinates)")


def dist(p, q):
    """``math.dist(p, q)``, differentiable on duals (0 where the points coincide)."""
    p = tuple(p)
    q = tuple(q)
    if not (_has_dual(p) or _has_dual(q)):
        return _math.dist(p, q)
    _math.dist([_open_value(_scalar("dist", x)) for x in p],
               [_open_value(_scalar("dist", x)) for x in q])  # math's errors (lengths)
    n = len(p)

    def value(*vs):
        return dist(vs[:n], vs[n:])

    def partials(*vs):
        d = dist(vs[:n], vs[n:])
        if _open_value(d) == 0.0:
            return (0.0,) * (2 * n)
        ds = [(a - b) / d for a, b in zip(vs[:n], vs[n:])]
        return tuple(ds) + tuple(-g for g in ds)

    return _lift([_scalar("dist", x) for x in p + q], value, partials)


def fsum(iterable):
    """``math.fsum``: the correctly rounded sum; on duals, derivative 1 for each term."""
    items = list(iterable)
    if not _has_dual(items):
        return _math.fsum(items)
    n = len(items)
    return _lift([_scalar("fsum", x) for x in items], lambda *vs: fsum(vs),
                 lambda *vs: (1.0,) * n)


def prod(iterable, *, start=1):
    """``math.prod``: the product, left to right, so duals give math's value to the bit."""
    items = list(iterable)
    if not (_has_dual(items) or _is_dual(start)):
        return _math.prod(items, start=start)
    return _functools.reduce(_operator.mul, [_scalar("prod", x) for x in items],
                             _scalar("prod", start))


if hasattr(_math, "sumprod"):
    def sumprod(p, q):
        """``math.sumprod(p, q)`` (extended precision), differentiable on duals."""
        p = tuple(p)
        q = tuple(q)
        if not (_has_dual(p) or _has_dual(q)):
            return _math.sumprod(p, q)
        _math.sumprod([_open_value(x) for x in p], [_open_value(x) for x in q])  # math's errors
        n = len(p)
        return _lift([_scalar("sumprod", x) for x in p + q],
                     lambda *vs: sumprod(vs[:n], vs[n:]), lambda *vs: vs[n:] + vs[:n])


if hasattr(_math, "fma"):
    def fma(x, y, z):
        """``math.fma(x, y, z)`` (one rounding), differentiable on duals."""
        if not _has_dual((x, y, z)):
            return _math.fma(x, y, z)
        return _primitive("fma", (x, y, z), lambda a, b, c: (b, a, 1.0))


def _sign(v):
    v = _open_value(v)
    return 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)


def copysign(x, y):
    """``math.copysign(x, y)``; derivative sign(x) * (sign of y) in x (0 at 0), 0 in y."""
    if not (_is_dual(x) or _is_dual(y)):
        return _math.copysign(x, y)
    return _primitive("copysign", (x, y), lambda a, b: (
        _sign(a) * _math.copysign(1.0, _open_value(b)), 0.0))


def fmod(x, y):
    """``math.fmod(x, y)`` = x - y * trunc(x / y); partials 1 and -trunc(x / y)."""
    if not (_is_dual(x) or _is_dual(y)):
        return _math.fmod(x, y)
    return _primitive("fmod", (x, y), lambda a, b: (
        1.0, -float(_math.trunc(_open_value(a) / _open_value(b)))))


def remainder(x, y):
    """``math.remainder(x, y)`` = x - n * y, n nearest to x / y; partials 1 and -n."""
    if not (_is_dual(x) or _is_dual(y)):
        return _math.remainder(x, y)

    def partials(a, b):
        va, vb = _open_value(a), _open_value(b)
        return 1.0, -float(round((va - _math.remainder(va, vb)) / vb))

    return _primitive("remainder", (x, y), partials)


def _pow2(i):
    try:
        return _math.ldexp(1.0, i)
    except OverflowError:
        return inf


def ldexp(x, i):
    """``math.ldexp(x, i)`` = x * 2**i; derivative 2**i in x (``i`` is an int, as for math)."""
    if _is_dual(i):
        raise TypeError("deltaad.math.ldexp(x, i): the exponent i must be an int, as for "
                        "math.ldexp, not a dual (use x * 2.0 ** i for a real exponent)")
    if not _is_dual(x):
        return _math.ldexp(x, i)
    return _lift([_scalar("ldexp", x)], lambda v: ldexp(v, i), lambda v: (_pow2(i),))


def frexp(x):
    """``math.frexp(x)`` = (m, e) with x = m * 2**e: ``m`` a dual (derivative 2**-e), ``e`` an
    int."""
    if not _is_dual(x):
        return _math.frexp(x)
    x = _scalar("frexp", x)
    m, ex = _math.frexp(_open_value(x))
    return _lift([x], lambda v: frexp(v)[0], lambda v: (_pow2(-ex),)), ex


def modf(x):
    """``math.modf(x)`` = (fractional part, integer part): derivative 1 and 0."""
    if not _is_dual(x):
        return _math.modf(x)
    x = _scalar("modf", x)
    frac, whole = _math.modf(_open_value(x))
    return _lift([x], lambda v: modf(v)[0], lambda v: (1.0,)), whole


def nextafter(x, y, *args, **kwargs):
    """``math.nextafter``; on duals, derivative 1 in x (x moved by an ulp), 0 in y."""
    if not (_is_dual(x) or _is_dual(y)):
        return _math.nextafter(x, y, *args, **kwargs)
    vy = _open_value(_scalar("nextafter", y))
    if not _is_dual(x):
        return _math.nextafter(x, vy, *args, **kwargs)
    return _lift([_scalar("nextafter", x)], lambda v: nextafter(v, vy, *args, **kwargs),
                 lambda v: (1.0,))


def pow(x, y):
    """``math.pow(x, y)`` (math's errors: a ValueError for 0 ** negative and for a negative
    base with a non-integer exponent), differentiable on duals as ``x ** y``."""
    if not (_is_dual(x) or _is_dual(y)):
        return _math.pow(x, y)
    x = _scalar("pow", x)
    y = _scalar("pow", y)
    _math.pow(_open_value(x), _open_value(y))  # math's errors
    if not _is_dual(x):
        x = float(x)
    if not _is_dual(y):
        y = float(y)
    return x ** y


pow = _B.math_function("pow", "pow", _math.pow, pow, "(x, y, /)")


# --------------------------------------------------------------------------------------------
# gamma and lgamma: their derivatives are the polygamma functions (not in math: here)

_BERNOULLI = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6,
              -3617.0 / 510, 43867.0 / 798, -174611.0 / 330)


def _polygamma_float(n, x):
    """psi^(n)(x), the (n+1)-th derivative of lgamma, for a float ``x`` (not a pole)."""
    if x <= 0.0 and x == _math.floor(x):
        return nan
    if x < 0.5:
        if n == 0:  # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
            return _polygamma_float(0, 1.0 - x) - pi / _math.tan(pi * x)
        if n == 1:  # psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x)
            s = _math.sin(pi * x)
            return pi * pi / (s * s) - _polygamma_float(1, 1.0 - x)
    acc = 0.0
    sign = -1.0 if n % 2 == 0 else 1.0  # psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1)
    fact = float(_math.factorial(n))
    while x < 15.0 + n:
        acc += sign * fact / x ** (n + 1)
        x += 1.0
    if n == 0:
        s = _math.log(x) - 0.5 / x
        x2 = x * x
        xp = x2
        for k, b in enumerate(_BERNOULLI, 1):
            s -= b / (2 * k * xp)
            xp *= x2
        return acc + s
    s = _math.factorial(n - 1) / x ** n + fact / (2.0 * x ** (n + 1))
    for k, b in enumerate(_BERNOULLI, 1):
        s += b * _math.factorial(2 * k + n - 1) / (_math.factorial(2 * k) * x ** (2 * k + n))
    return acc + (s if n % 2 == 1 else -s)


def _polygamma(n, x):
    """psi^(n)(x) on floats and duals (its derivative is psi^(n+1))."""
    if type(x) is float:
        return _polygamma_float(n, x)
    if not _is_dual(x):
        return _polygamma_float(n, float(x))
    return _lift([x], lambda v: _polygamma(n, v), lambda v: (_polygamma(n + 1, v),))


def gamma(x):
    """``math.gamma``; derivative gamma(x) * digamma(x)."""
    if not _is_dual(x):
        return _math.gamma(x)
    return _primitive("gamma", (x,), lambda v: (gamma(v) * _polygamma(0, v),))


def lgamma(x):
    """``math.lgamma`` (log |gamma(x)|); derivative digamma(x)."""
    if not _is_dual(x):
        return _math.lgamma(x)
    return _primitive("lgamma", (x,), lambda v: (_polygamma(0, v),))


__all__ = [_n for _n in dir(_math) if not _n.startswith("_")]
_missing = [_n for _n in __all__ if _n not in globals()]
assert not _missing, "deltaad.math lacks %s" % _missing
del _missing
