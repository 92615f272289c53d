"""The scalar rules both backends share: the derivative namespace and the power operator.

Each backend lifts every entry of the elementwise table (:mod:`deltaad.elementwise`) to
scalars -- floats and scalar duals -- and evaluates the entries' derivative expressions over
:func:`namespace`, whose functions are the backend's own. So a derivative taken where the value
is a dual of an outer differentiation is recorded there, and differentiates again. The
compiled core also has a C copy of the float formulas for speed; the tests hold the two to the
same bits.
"""

from deltaad._plainmath import math
import sys
from types import SimpleNamespace

from deltaad._plainnumpy import np

INF = math.inf
NAN = math.nan


def namespace(strip, lift):
    """The scalar namespace ``ns`` of the table's derivative expressions, before the backend
    adds its lifted functions (``ns.sin`` ...). ``strip`` gives a scalar's plain value and
    ``lift`` applies a primitive of n reals (the paper's general primitive)."""

    def rdiv(a, b):
        """``a / b``, IEEE (inf or nan, never raising) when ``b`` is zero. Every divisor here is
        >= 0 in exact arithmetic: a -0.0 is an artefact of signed zeros (``sqrt(-0.0)``), so the
        result takes the sign of ``a`` only (``grad(sqrt)(-0.0)`` is +inf, as for ``x ** 0.5``)."""
        if isinstance(b, np.generic):
            b = float(b)  # a numpy scalar under a nested derivative: divided as a float
        if type(b) is float or strip(b) is b:  # a float, or a recorded number (compile)
            if b == 0.0:
                sa = strip(a)
                if sa == 0.0 or sa != sa:
                    return NAN
                return math.copysign(INF, sa)
            return a / b
        if strip(b) == 0.0:
            # ``b`` is a dual (of an outer differentiation) at zero: this derivative at the edge
            # of a domain is itself being differentiated (e.g. sqrt'' at 0). Divide as a
            # primitive whose value and partials are IEEE too, instead of raising.
            return lift([a, b], rdiv, lambda u, v: (rdiv(1.0, v), -rdiv(rdiv(u, v), v)))
        return a / b

    def sign(x):
        s = strip(x)
        return 1.0 if s > 0.0 else (-1.0 if s < 0.0 else (0.0 if s == 0.0 else NAN))

    def where(c, a, b):
        return a if c else b

    return SimpleNamespace(rdiv=rdiv, sign=sign, value=strip, where=where)


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


def pow_rules(strip, lift):
    """``(ipow, pow_da)`` for the power operator of a backend with these ``strip``/``lift``.

    ``pow_da(a, b)`` is the partial ``d/da a**b = b * a**(b - 1)``: 0 when ``b`` is the constant
    0 and ``a == 0`` (``a**0`` is 1 everywhere; ``0 * inf`` would give nan there), and IEEE
    infinity at ``a == 0`` with ``b < 1`` -- also when ``a`` is a dual of an outer
    differentiation (``ipow``), so that second derivatives at 0 do not raise.
    """

    def ipow(a, b):
        if type(a) is float and type(b) is float:
            return ieee_pow(a, b)
        if strip(a) == 0.0 and strip(b) < 0.0:
            return lift([a, b], ieee_pow, lambda u, v: (pow_da(u, v), 0.0))
        return a ** b

    def pow_da(a, b):
        if strip(b) == 0.0 and strip(a) == 0.0:
            # a**0 is 1 everywhere: 0, not 0 * inf; also when b is a dual of an outer
            # differentiation, so nesting does not change this value. Elsewhere
            # b * a**(b-1) is a signed zero, kept as it is.
            return 0.0
        return b * ipow(a, b - 1.0)

    return ipow, pow_da


_FLOAT64 = np.dtype(np.float64)


def _numpy_scalar_tests():
    """The code of numpy's mean/var/std of object arrays, which take an element with a
    ``dtype`` for a numpy scalar and convert it with ``float()`` (a dual would lose its
    derivative there: to them a dual has no dtype, and they keep it as it is)."""
    try:
        from numpy._core import _methods
    except ImportError:  # numpy < 2
        from numpy.core import _methods
    return frozenset(getattr(_methods, n).__code__ for n in ("_mean", "_var", "_std")
                     if hasattr(getattr(_methods, n, None), "__code__"))


_NUMPY_SCALAR_TESTS = _numpy_scalar_tests()


def _dtype(self):
    if sys._getframe(1).f_code in _NUMPY_SCALAR_TESTS:
        raise AttributeError("dtype")
    return _FLOAT64


# What a scalar dual answers like a numpy scalar (``np.float64(1.0).shape == ()``), so code
# that asks ``x.shape`` or ``x.dtype`` of an element works on duals too. Both backends add
# these to their ``Dual`` type (the core through its type dictionary, off the hot path).
SCALAR_ATTRIBUTES = {
    "shape": property(lambda self: (), doc="``()``: a scalar, as numpy's scalars."),
    "ndim": property(lambda self: 0, doc="0: a scalar, as numpy's scalars."),
    "size": property(lambda self: 1, doc="1: a scalar, as numpy's scalars."),
    "dtype": property(_dtype, doc="float64, the dtype of the value."),
}


# --------------------------------------------------------------------------------------------
# numpy scalars: their arithmetic is numpy's, their derivative a float's


def is_numpy_scalar(x):
    """True for a numpy scalar (``np.float64``, ``np.float32``, ``np.int64``, ...)."""
    return type(x).__module__ == "numpy"


def numpy_const(x):
    """A real constant operand that is not a float or an int: a numpy scalar stays one (the
    plain program computes with it, as numpy does), anything else becomes a float."""
    return x if is_numpy_scalar(x) else float(x)


def ieee_div(a, b):
    """``a / b`` for floats as C computes it: inf or nan at ``b == 0``, never raising."""
    if b != 0.0:
        return a / b
    if a == 0.0 or a != a:
        return NAN
    return math.copysign(INF, a) * math.copysign(1.0, b)


def numpy_partials(op, a, b):
    """The partial derivatives ``(da, db)`` of the binary operator ``op`` ("add", "sub", "mul",
    "div", "mod", "pow") at plain operands ``a``, ``b``, at least one a numpy scalar.

    The value is the backend's to compute, as the plain program does: numpy's arithmetic, in
    numpy's type, with numpy's ``inf``/``nan`` and ``RuntimeWarning`` where a float would
    raise. The partials are the float operator's at ``float(a)``, ``float(b)``, in double
    precision and IEEE arithmetic (inf or nan, never an exception or a warning of their own):
    a numpy scalar program differentiates as the float program would (for np.float64 these
    are the float path's bits)."""
    if op == "add":
        return 1.0, 1.0
    if op == "sub":
        return 1.0, -1.0
    fa = float(a)
    fb = float(b)
    if op == "mul":
        return fb, fa
    if op == "div":
        return ieee_div(1.0, fb), -ieee_div(ieee_div(fa, fb), fb)
    if op == "mod":  # a % b == a - b * floor(a / b)
        return 1.0, (-(fa // fb) if fb != 0.0 else NAN)
    # pow
    real = not (fa < 0.0 and math.isfinite(fb) and fb != math.floor(fb))
    if fb == 0.0 and fa == 0.0:
        da = 0.0  # a**0 is 1 everywhere (as pow_rules' pow_da)
    else:
        da = fb * ieee_pow(fa, fb - 1.0) if real else NAN  # no real power: the value is nan
    db = math.log(fa) * ieee_pow(fa, fb) if fa > 0.0 else (0.0 if fa == 0.0 else NAN)
    return da, db


def numpy_abs(a, plain):
    """``(abs(a), d abs / da)`` for ``a`` whose plain value ``plain`` (under any dual levels)
    is a numpy scalar: numpy's value, the float derivative (0 at 0, nan at nan, as the
    table's ``absolute``)."""
    fa = float(plain)
    return abs(a), (1.0 if fa > 0.0 else (-1.0 if fa < 0.0 else (0.0 if fa == 0.0 else NAN)))


def numpy_weak(c, like):
    """The float constant ``c`` as numpy treats a Python float next to the numpy scalar
    ``like`` (a "weak" scalar: it takes ``like``'s float type), for a division whose partials
    are computed on duals of a numpy scalar (1 / 0 is then numpy's inf, not an exception)."""
    return type(like)(c) if isinstance(like, np.floating) else np.float64(c)


def as_float_coef(c):
    """A partial derivative as the tape keeps it: a numpy float64 (a float subclass) becomes
    the float of the same bits, so that it is swept like any float; other types stay."""
    return float(c) if type(c) is not float and isinstance(c, float) else c
