"""Elementary functions on floats and duals (and, through numpy, on arrays).

The primitives come from the backend, which records one binding per call. Functions whose
derivative is zero almost everywhere (``sign``, ``floor``, ``ceil``) return plain numbers: the
paper's ``Zero``. ``fmin``/``fmax``/``clip`` choose by comparing values, so they are
differentiable through whichever branch the value takes (papers/004, "branch taken").

Values chosen at non-differentiable points (documented in the README):
- ``abs(x)`` at 0: derivative 0 (a subgradient; PyTorch's choice).
- ``fmax(a, b)``/``fmin(a, b)`` when ``a == b``: each argument gets 1/2 (JAX's and PyTorch's).
- ``clip(x, lo, hi)``: derivative 1 with respect to ``x`` for ``lo <= x <= hi``, boundaries
  included; outside, the gradient flows to the bound that was taken (``hi`` when ``lo > hi``,
  as numpy).
- ``hypot(a, b)`` at (0, 0): derivative (0, 0).
- ``floor``, ``ceil``, ``sign``, ``round``, ``//``: derivative 0 everywhere (also at jumps).
- ``a ** b`` with respect to ``b`` at ``a == 0``: 0; with ``a < 0``: nan.
"""

import math

from ._backend import B

pi = math.pi
e = math.e

sin = B.sin
cos = B.cos
tan = B.tan
arcsin = B.arcsin
arccos = B.arccos
arctan = B.arctan
sinh = B.sinh
cosh = B.cosh
tanh = B.tanh
arcsinh = B.arcsinh
arccosh = B.arccosh
arctanh = B.arctanh
exp = B.exp
expm1 = B.expm1
exp2 = B.exp2
log = B.log
log1p = B.log1p
log2 = B.log2
log10 = B.log10
sqrt = B.sqrt
cbrt = B.cbrt
erf = B.erf
erfc = B.erfc
sigmoid = B.sigmoid
softplus = B.softplus
arctan2 = B.arctan2
hypot = B.hypot
logaddexp = B.logaddexp
power = B.power
abs = B.absolute
absolute = B.absolute


def value(x):
    """The primal value of ``x``: the plain number (or array) under every dual level.

    Identity on anything that is not a dual. Works on duals whose differentiation has finished.
    """
    while type(x) is B.Dual or getattr(type(x), "_deltaad_array_dual", False):
        x = x.value
    return x


def _scalar_or_fallback(name, x):
    return isinstance(x, (float, int, B.Dual))


def _scalars(*xs):
    return all(isinstance(x, (float, int, B.Dual)) for x in xs)


def sign(x):
    """-1, 0 or 1 as a float; derivative 0 (a constant)."""
    if not _scalar_or_fallback("sign", x):
        import numpy as np

        return np.sign(x)
    v = B.check_open(x)
    return 1.0 if v > 0 else (-1.0 if v < 0 else (0.0 if v == 0 else math.nan))


def floor(x):
    """Largest integer <= x, as a float; derivative 0."""
    if not _scalar_or_fallback("floor", x):
        import numpy as np

        return np.floor(x)
    return float(math.floor(B.check_open(x)))


def ceil(x):
    """Smallest integer >= x, as a float; derivative 0."""
    if not _scalar_or_fallback("ceil", x):
        import numpy as np

        return np.ceil(x)
    return float(math.ceil(B.check_open(x)))


def fmax(a, b):
    """The larger of ``a`` and ``b``; a nan argument is ignored (like numpy's fmax)."""
    if not _scalars(a, b):
        import numpy as np

        return np.fmax(a, b)
    va = B.check_open(a)  # the value, raising for an escaped dual (either is returned)
    vb = B.check_open(b)
    if va != va:
        return b
    if vb != vb or va > vb:
        return a
    if vb > va:
        return b
    return (a + b) * 0.5


def fmin(a, b):
    """The smaller of ``a`` and ``b``; a nan argument is ignored (like numpy's fmin)."""
    if not _scalars(a, b):
        import numpy as np

        return np.fmin(a, b)
    va = B.check_open(a)
    vb = B.check_open(b)
    if va != va:
        return b
    if vb != vb or va < vb:
        return a
    if vb < va:
        return b
    return (a + b) * 0.5


def clip(x, lo, hi):
    """``x`` limited to ``[lo, hi]``; gradient 1 to ``x`` inside, boundaries included. Like
    numpy's ``minimum(maximum(x, lo), hi)``, ``hi`` wins when ``lo > hi``."""
    if not _scalars(x, lo, hi):
        import numpy as np

        return np.clip(x, lo, hi)
    v = B.check_open(x)
    vl = B.check_open(lo)
    vh = B.check_open(hi)
    if vh < vl or v > vh:
        return hi
    if v < vl:
        return lo
    return x
