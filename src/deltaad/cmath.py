"""``deltaad.cmath``: Python's ``cmath`` module, differentiable.

Every name of ``cmath`` is here. On plain numbers each function *is* ``cmath``'s (the same
value, the same exceptions); on duals -- real ones, or complex duals such as ``x + 1j * y`` --
the value is still ``cmath``'s on the plain values, and the derivative is the one of the
holomorphic table (``deltaad.numpy.complex_rules.HOLOMORPHIC``) that numpy's ufuncs use, so
``import deltaad.cmath as cmath`` turns a ``cmath`` program into a differentiable one.
``phase``, ``polar`` and ``rect`` are real-to-complex and complex-to-real; ``isfinite``,
``isinf``, ``isnan`` and ``isclose`` answer on the values (derivative zero).
"""

from ._plainmath import cmath as _cmath

from deltaad._plainnumpy import np

from .numpy.complex_array import capply, cprimitive
from .numpy.complex_rules import ABS_OP, HOLOMORPHIC, PHASE, holomorphic_primitive, times
from .trace import is_dual
from .trace import value as _value

pi = _cmath.pi
e = _cmath.e
tau = _cmath.tau
inf = _cmath.inf
infj = _cmath.infj
nan = _cmath.nan
nanj = _cmath.nanj

__all__ = ["pi", "e", "tau", "inf", "infj", "nan", "nanj", "phase", "polar", "rect", "exp",
           "log", "log10", "sqrt", "acos", "asin", "atan", "cos", "sin", "tan", "acosh",
           "asinh", "atanh", "cosh", "sinh", "tanh", "isfinite", "isinf", "isnan", "isclose"]


def _lift(h):
    f = getattr(_cmath, h.cmath)
    prim = holomorphic_primitive("cmath." + h.cmath, f, h.derivative)

    def fn(x):
        if not is_dual(x):
            return f(x)
        return capply(prim, (x,))

    fn.__name__ = fn.__qualname__ = h.cmath
    fn.__doc__ = "``cmath.%s``, differentiable (derivative: as numpy.%s's)." % (h.cmath, h.name)
    fn.primitive = prim
    return fn


for _h in HOLOMORPHIC:
    if _h.cmath is not None and _h.cmath != "log":
        globals()[_h.cmath] = _lift(_h)
del _h


def _log_impl(x, base=None):
    return _cmath.log(x) if base is None else _cmath.log(x, base)


def _log_partials(vals, out):
    """``(d/dx, d/dbase)`` of ``log(x) / log(base)``."""
    x = vals[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(vals) == 1:
            return (1.0 / x,)
        lb = np.log(vals[1] + 0j)
        return 1.0 / (x * lb), -out / (vals[1] * lb)


def _log_vjp(out, vals, on, **kw):
    ds = [np.conj(d) for d in _log_partials(vals, out)]
    return lambda c: tuple(times(c, d) for d in ds)


def _log_jvp(out, vals, tans, **kw):
    t = None
    for tk, d in zip(tans, _log_partials(vals, out)):
        if tk is not None:
            u = times(tk, d)
            t = u if t is None else t + u
    return t


_LOG = cprimitive("cmath.log", _log_impl, _log_vjp, _log_jvp)


def log(x, base=None):
    """``cmath.log(x[, base])``, differentiable in ``x`` and ``base``."""
    if not is_dual(x) and not is_dual(base):
        return _cmath.log(x) if base is None else _cmath.log(x, base)
    return capply(_LOG, (x,) if base is None else (x, base))


def phase(x):
    """``cmath.phase``: the argument of ``x`` (nan derivative at 0, as ``arctan2``)."""
    if not is_dual(x):
        return _cmath.phase(x)
    return capply(PHASE, (x,))


_POLAR_R = cprimitive("cmath.polar", lambda z: _cmath.polar(z)[0], ABS_OP.vjp, ABS_OP.jvp,
                      real_out=True)
_POLAR_PHI = cprimitive("cmath.polar", lambda z: _cmath.polar(z)[1], PHASE.vjp, PHASE.jvp,
                        real_out=True)


def polar(x):
    """``cmath.polar``: ``(abs(x), phase(x))`` as a tuple of real duals."""
    if not is_dual(x):
        return _cmath.polar(x)
    return capply(_POLAR_R, (x,)), capply(_POLAR_PHI, (x,))


def _rect_partials(vals, out):
    r, phi = vals
    u = np.exp(1j * phi)  # e^{i phi}: d/dr; i r e^{i phi}: d/dphi
    return u, 1j * out


def _rect_vjp(out, vals, on):
    du, dp = (np.conj(d) for d in _rect_partials(vals, out))
    return lambda c: (c * du if on[0] else None, c * dp if on[1] else None)


def _rect_jvp(out, vals, tans):
    du, dp = _rect_partials(vals, out)
    t = None
    for tk, d in zip(tans, (du, dp)):
        if tk is not None:
            u = tk * d
            t = u if t is None else t + u
    return t


_RECT = cprimitive("cmath.rect", _cmath.rect, _rect_vjp, _rect_jvp)


def rect(r, phi):
    """``cmath.rect(r, phi)``: ``r e^{i phi}``, differentiable in both."""
    if not is_dual(r) and not is_dual(phi):
        return _cmath.rect(r, phi)
    return capply(_RECT, (r, phi))


def isfinite(x):
    return _cmath.isfinite(_value(x))


def isinf(x):
    return _cmath.isinf(_value(x))


def isnan(x):
    return _cmath.isnan(_value(x))


def isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0):
    return _cmath.isclose(_value(a), _value(b), rel_tol=rel_tol, abs_tol=abs_tol)

