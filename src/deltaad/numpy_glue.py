"""numpy glue: how duals answer numpy's protocols (installed into the backend at import).

- A scalar dual meeting a numpy ufunc (``np.sin(x)``, ``np.float64(2.0) * x``) reaches
  ``Dual.__array_ufunc__``, which lands in :func:`array_ufunc`: scalars go to deltaad's scalar
  functions; anything with an array goes to the array rules (:mod:`deltaad.array_rules`) and
  gives an array dual; numpy object arrays keep numpy's object semantics (elementwise, through
  the scalar duals' methods: correct but slow).
- ``deltaad.sin(array)`` and friends reach :func:`fallback`, which applies the array rule.
- Array leaves of a differentiation become array duals through :func:`array_input`.

A ufunc or function deltaad has no rule for is an error naming it, never a silently wrong
(derivative-free) result.
"""

import numbers
import operator

import numpy as np

from . import functions as F
from ._backend import B
from . import arrays
from . import array_rules

Dual = B.Dual

def _nan_first(a, b, choose):
    """numpy's maximum/minimum: a nan argument is the result (fmax/fmin would ignore it)."""
    va, vb = F.value(a), F.value(b)
    if va != va:
        return a
    if vb != vb:
        return b
    return choose(a, b)


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
    np.conjugate: operator.pos,
    np.absolute: F.absolute,
    np.fabs: F.absolute,
    np.square: lambda x: x * x,
    np.reciprocal: lambda x: 1.0 / x,
    np.maximum: lambda a, b: _nan_first(a, b, F.fmax),
    np.minimum: lambda a, b: _nan_first(a, b, F.fmin),
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
    if isinstance(x, (numbers.Real, np.bool_)):  # np.bool_ is not a numbers.Real
        return float(x)
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "fiub":
        return float(x)
    if isinstance(x, (complex, np.complexfloating)) or isinstance(x, np.ndarray) and x.dtype.kind == "c":
        raise arrays._complex_error()
    return None


def scalar_ufunc(ufunc, inputs):
    """A ufunc whose inputs are all scalars (at least one a scalar dual): a scalar result."""
    args = [_scalar(x) for x in inputs]
    if any(a is None for a in args):
        return NotImplemented
    f = _UFUNCS.get(ufunc)
    if f is not None:
        return f(*args)
    rule = arrays.UFUNC_RULES.get(ufunc)
    if rule is None:
        raise arrays._not_implemented(ufunc)
    r = rule(*args)  # e.g. np.deg2rad: the array rule on 0-d operands, back to a scalar
    return arrays.getitem(r, (), True) if type(r) is arrays.ArrayDual else r


def array_ufunc(ufunc, method, inputs, kwargs):
    """``Dual.__array_ufunc__``: a scalar dual in a numpy ufunc."""
    return arrays.ufunc_dispatch(ufunc, method, inputs, dict(kwargs))


def array_function(self, func, types, args, kwargs):
    """``Dual.__array_function__`` (installed where the backend's Dual allows it): numpy
    functions on scalar duals, e.g. ``np.stack([x, y])`` gives an array dual."""
    r = arrays.function_dispatch(func, args, kwargs)
    if type(r) is arrays.ArrayDual and r.ndim == 0 and not _mentions_array_dual(args, kwargs):
        return arrays.getitem(r, (), True)  # numpy gives scalars for 0-d results of scalars
    return r


def _mentions_array_dual(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if type(a) is arrays.ArrayDual:
            return True
        if type(a) in (list, tuple) and any(type(e) is arrays.ArrayDual for e in a):
            return True
    return False


def fallback(name, *args):
    """A deltaad math function (``deltaad.sin``...) called on something that is not a scalar."""
    rule = array_rules.ELEMENTWISE.get(name)
    if rule is not None:
        ops = [arrays.operand(a) for a in args]
        if all(o is not None for o in ops):
            return rule(*ops)
    f = getattr(np, name, None)
    if f is None:
        raise TypeError("deltaad.%s: unsupported argument types %s" % (name, [type(a).__name__ for a in args]))
    return f(*args)


array_input = arrays.array_input
asarray = arrays.asarray

B.set_hooks(fallback, array_ufunc, array_function)

# numpy functions on scalar duals (np.stack([x, y]) -> array dual) go through
# Dual.__array_function__, which both backends route to ``array_function``.
SCALAR_ARRAY_FUNCTION = True
