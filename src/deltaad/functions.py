"""deltaad's functions on floats and duals (and, through numpy, on arrays).

The elementary functions (``sin``, ``exp``, ``hypot``...) are the backend's lift of each entry
of the elementwise table (:mod:`deltaad.elementwise`, where their derivatives and the values
chosen at their non-differentiable points are). The rest are piecewise: ``sign``, ``floor``,
``ceil`` have derivative zero and return plain numbers (the paper's ``Zero``); ``fmin``,
``fmax`` and ``clip`` choose by comparing values, so they are differentiable through whichever
argument the value takes (Abadi and Plotkin's branch-taken semantics). Their chosen values:

- ``fmax(a, b)``/``fmin(a, b)`` when ``a == b``: each argument gets 1/2 (JAX's and PyTorch's);
- ``clip(x, lo, hi)``: derivative 1 with respect to ``x`` for ``lo <= x <= hi``, boundaries
  included; outside, the gradient flows to the bound that was taken (``hi`` when ``lo > hi``,
  as numpy);
- ``floor``, ``ceil``, ``sign``: derivative 0 everywhere (also at jumps);
- ``a ** b`` with respect to ``b`` at ``a == 0``: 0; with ``a < 0``: nan.
"""

from deltaad._plainmath import math

from deltaad._plainnumpy import np

from . import elementwise as _table
from ._backend import B
from .trace import value

pi = math.pi
e = math.e

# The elementary functions: the backend's lift of each entry of the table.
for _e in _table.TABLE:
    globals()[_e.name] = getattr(B, _e.name)
del _e
abs = B.absolute
power = B.power


def stop_gradient(x):
    """The plain value of ``x`` at every level: a constant for every differentiation."""
    return value(x)


def _scalars(*xs):
    return all(isinstance(x, (float, int, B.Dual)) for x in xs)


def sign(x):
    """-1, 0 or 1 as a float; derivative 0 (a constant)."""
    if not _scalars(x):
        return np.sign(x)
    v = B.check_open(x)
    return 1.0 if v > 0 else (-1.0 if v < 0 else (0.0 if v == 0 else math.nan))


def floor(x):
    """Largest integer <= x, as a float; derivative 0."""
    if not _scalars(x):
        return np.floor(x)
    return float(math.floor(B.check_open(x)))


def ceil(x):
    """Smallest integer >= x, as a float; derivative 0."""
    if not _scalars(x):
        return np.ceil(x)
    return float(math.ceil(B.check_open(x)))


def fmax(a, b):
    """The larger of ``a`` and ``b``; a nan argument is ignored (like numpy's fmax)."""
    if not _scalars(a, b):
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
        return np.clip(x, lo, hi)
    v = B.check_open(x)
    vl = B.check_open(lo)
    vh = B.check_open(hi)
    if vh < vl or v > vh:
        return hi
    if v < vl:
        return lo
    return x


# What the piecewise functions choose where they are not differentiable (the documentation's
# table of supported functions shows it beside the elementwise table's entries).
CHOSEN = {
    "sign": ("constant", "derivative 0 everywhere"),
    "floor": ("constant", "derivative 0 everywhere"),
    "ceil": ("constant", "derivative 0 everywhere"),
    "fmax": ("rev, fwd", "1/2 to each argument at a tie; a nan argument is ignored"),
    "fmin": ("rev, fwd", "1/2 to each argument at a tie; a nan argument is ignored"),
    "clip": ("rev, fwd", "1 for lo <= x <= hi (bounds included); outside, to the bound taken "
                         "(hi when lo > hi)"),
    "power": ("rev, fwd", "in the exponent: 0 where the base is 0, nan where it is negative"),
}


__all__ = ["pi", "e", "abs", "power", "value", "stop_gradient", "sign", "floor", "ceil", "fmax",
           "fmin", "clip"] + [_entry.name for _entry in _table.TABLE]
