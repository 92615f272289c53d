"""numpy glue: how scalar duals answer numpy's protocols, and where array duals will plug in.

``np.float64(2.0) * x`` and ``np.sin(x)`` on a scalar dual reach ``Dual.__array_ufunc__``,
which lands here and maps the ufunc to deltaad's own function. A ufunc deltaad has no rule for
is an error naming it, never a silently wrong (derivative-free) result.
"""

import numbers
import operator

import numpy as np

from . import functions as F
from ._backend import B

Dual = B.Dual

_UFUNCS = {
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
    np.true_divide: operator.truediv,
    np.floor_divide: operator.floordiv,
    np.remainder: operator.mod,
    np.power: F.power,
    np.float_power: F.power,
    np.negative: operator.neg,
    np.positive: operator.pos,
    np.absolute: F.absolute,
    np.square: lambda x: x * x,
    np.reciprocal: lambda x: 1.0 / x,
    np.maximum: F.fmax,
    np.minimum: F.fmin,
    np.fmax: F.fmax,
    np.fmin: F.fmin,
    np.sign: F.sign,
    np.floor: F.floor,
    np.ceil: F.ceil,
    np.less: operator.lt,
    np.less_equal: operator.le,
    np.greater: operator.gt,
    np.greater_equal: operator.ge,
    np.equal: operator.eq,
    np.not_equal: operator.ne,
}
for _name in (
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp expm1 exp2 "
    "log log1p log2 log10 sqrt cbrt arctan2 hypot logaddexp"
).split():
    _UFUNCS[getattr(np, _name)] = getattr(F, _name)


def _scalar(x):
    if type(x) is Dual or type(x) is float:
        return x
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "fiub":
        return float(x)
    return None


def array_ufunc(ufunc, method, inputs, kwargs):
    """``Dual.__array_ufunc__``: scalar duals through numpy ufuncs."""
    if method != "__call__" or kwargs:
        return NotImplemented
    f = _UFUNCS.get(ufunc)
    args = [_scalar(x) for x in inputs]
    if any(a is None for a in args):
        return NotImplemented
    if f is None:
        raise NotImplementedError(
            "deltaad has no derivative rule for numpy.%s; use a supported function or define one "
            "with deltaad.primitive / deltaad.custom_vjp" % ufunc.__name__
        )
    return f(*args)


def fallback(name, *args):
    """A deltaad math function called on something that is not a scalar: hand it to numpy."""
    f = getattr(np, name, None)
    if f is None:
        raise TypeError("deltaad.%s: unsupported argument %r" % (name, args))
    return f(*args)


def array_input(trace, value, tangent):
    """An array leaf as an input of ``trace``: provided by deltaad's array support."""
    raise NotImplementedError(
        "differentiating with respect to numpy arrays needs deltaad's array duals, which are not "
        "available yet; pass a list of floats instead"
    )


B.set_hooks(fallback, array_ufunc)
