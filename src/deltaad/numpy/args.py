"""numpy's argument conventions, checked once for every rule family: operands, axes, and the
keywords deltaad cannot honour on duals (``out=`` would write a dual into an array in place,
an integer ``dtype=`` would drop the derivative)."""

from deltaad._plainnumpy import np

from .array import ArrayDual, Dual, as_ndarray, operand_or_raise, reshape_scalar, shape_of

try:
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # numpy < 2
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

try:
    from numpy._globals import _NoValue
except ImportError:  # pragma: no cover
    _NoValue = object()

__all__ = [
    "normalize_axis_index", "normalize_axis_tuple", "NoValue", "np_fn", "ndim", "as_array",
    "axes_of", "expand_shape", "swap", "unsupported", "no_out", "check_novalue", "float_dtype",
    "cast",
]

NoValue = _NoValue


def np_fn(name, module=np):
    """``module.name``, or None where this numpy version lacks it (``register`` skips None)."""
    return getattr(module, name, None)


def ndim(x):
    return len(shape_of(x))


def as_array(x):
    """An operand as an array (dual): scalars become 0-d arrays, lists are packed."""
    x = operand_or_raise(x)
    t = type(x)
    if t is ArrayDual or t is np.ndarray:
        return x
    if t is Dual:
        return reshape_scalar(x)
    return as_ndarray(x)


def axes_of(axis, nd):
    """``axis`` (None, an int or a tuple) as a tuple of non-negative axes of an ``nd``-d array."""
    if axis is None:
        return tuple(range(nd))
    return normalize_axis_tuple(axis, nd)


_EXPANDED = {}


def expand_shape(shape, axs):
    """``shape`` with 1 at the reduced axes ``axs`` (what keepdims=True gives)."""
    key = (shape, axs)
    try:
        r = _EXPANDED.get(key)
    except TypeError:  # (a list)
        r = key = None
    if r is None:
        r = tuple(1 if i in axs else n for i, n in enumerate(shape))
        if key is not None:
            if len(_EXPANDED) > 4096:
                _EXPANDED.clear()
            _EXPANDED[key] = r
    return r


def swap(x):
    """The last two axes exchanged (a matrix transpose over a stack of matrices)."""
    if type(x) is np.ndarray:  # (what np.swapaxes calls)
        return x.swapaxes(-1, -2)
    return np.swapaxes(x, -1, -2)


def unsupported(name, what):
    raise NotImplementedError("deltaad: numpy.%s(..., %s) on dual numbers is not supported" % (name, what))


def no_out(name, out):
    if out is not None:
        raise TypeError(
            "numpy.%s(..., out=...) would write duals into an array in place; deltaad arrays are "
            "immutable under differentiation: use the returned value" % name
        )


def check_novalue(name, **kw):
    """Refuse keywords (``where=``, ``initial=``...) that were given and are not supported."""
    for k, v in kw.items():
        if v is not _NoValue and v is not None and not (k == "where" and v is True):
            unsupported(name, "%s=" % k)


def float_dtype(name, dtype):
    """A ``dtype=`` on duals must be a float dtype: anything else would drop the derivative."""
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError("numpy.%s(..., dtype=%s) on duals would drop the derivative" % (name, dtype))


def cast(r, dtype):
    """The result of a function given ``dtype=`` (already checked to be a float dtype)."""
    return r if dtype is None else r.astype(dtype)
