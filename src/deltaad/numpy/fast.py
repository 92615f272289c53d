"""The compiled fast path of array duals (``deltaad._arrays``), installed on the compiled backend.

The commonest elementwise operations on small float64 arrays (``+ - * /``, ``**`` by a constant,
``negative`` and the table's ``sin``, ``cos``, ``tan``, ``tanh``, ``exp``, ``log``, ``sqrt``,
``square``, ``absolute``, ``arctan``, ``sinh``, ``cosh``, ``expm1``, ``log1p``, ``reciprocal``;
``@`` by a constant matrix; basic indexing, ``np.concatenate``, ``np.maximum``/``np.minimum``
with a float bound), the reductions ``np.sum``, ``np.mean``, ``np.max`` and ``np.min`` and the
views ``reshape``, ``ravel`` and ``.T`` cost one numpy call each in the Python mechanism
(:func:`.array.apply`) several times over: the dispatch, the partials, the closure, the
backward rule. The extension does what ``apply`` does for them in C, with numpy's own inner
loops and functions; for the other operations of those ufuncs on a reverse tape
(broadcasting, float32, views, products of matrices) it makes ``apply``'s own calls without
``apply``'s frames, and everything else goes to ``apply`` (see its docstring). The pure
backend never installs it: it *is* the Python path, whose bits the fast path reproduces
(``tests/numpy/test_fast.py`` checks both against each other).
The same loops answer numpy's unary ufuncs of a float dual (``np.exp(x)`` in scalar code) for
the core's ``__array_ufunc__``: numpy's value on one float, the table's derivative over it.
``DELTAAD_ARRAY_FAST=0`` switches it off (the Python path on the compiled backend too).
"""

import os

from deltaad._plainnumpy import np

from .. import trace as _trace
from .._backend import B, name as _backend_name
from . import args, array, elementwise, reductions, registry
from .elementwise import NEGATIVE
from .products import MATMUL

try:
    if _backend_name != "c":
        raise ImportError("the pure backend takes the Python path")
    from .. import _arrays
except ImportError as exc:  # no compiled extension: the Python path (the same results)
    _arrays = None
    why = str(exc)
else:
    why = ""

# The extension's operation codes, in its order: the ufuncs taken, then the helper loops.
UFUNCS = (np.add, np.subtract, np.multiply, np.true_divide, np.power, np.negative, np.sin, np.cos,
          np.tan, np.tanh, np.exp, np.log, np.sqrt, np.square, np.absolute, np.arctan, np.sinh,
          np.cosh, np.expm1, np.log1p, np.reciprocal, np.sign, np.matmul, np.maximum, np.minimum)
HELPERS = (np.sign,)

_METHODS = ("__array_ufunc__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
            "__rmul__", "__truediv__", "__rtruediv__", "__pow__", "__matmul__", "__rmatmul__",
            "__neg__", "__getitem__", "__array_function__", "reshape", "ravel", "T")


def python_rule(prim, out, vals, on, keep, scalar=None):
    """The rule the Python path records for ``prim`` on these operands (what ``apply`` pushes,
    for operands that are duals of the recording tape -- array duals, and scalar duals at the
    positions ``scalar`` of ``keep`` -- or constants)."""
    rule = prim.vjp(out, vals, on)
    if scalar is not None or len(keep) != len(vals):
        rule = array.select(rule, list(keep), scalar)
    return rule


def _install():
    fns = []
    prims = []
    for u in UFUNCS:
        if u in HELPERS:
            fns.append(None)
            prims.append(None)
            continue
        fn = registry.UFUNCS[u]
        fns.append(fn)
        prims.append(NEGATIVE if u is np.negative else MATMUL if u is np.matmul
                     else fn.primitive)
    _arrays.setup(array.ArrayDual, B.Tape, B.array_push_capsule(), UFUNCS, registry.UFUNCS, fns, prims, python_rule)
    # the general lane: the primitive a registry function applies and nothing else (matmul's
    # checks that no operand is 0-d, which the lane repeats)
    _arrays.setup_general([MATMUL if u is np.matmul else getattr(fn, "applies", None)
                           for u, fn in zip(UFUNCS, fns)], np.asarray, B.Dual,
                           np.add.reduce)
    _arrays.bind_methods(array.ArrayDual, {m: getattr(array.ArrayDual, m) for m in _METHODS},
                         UFUNCS)
    _arrays.setup_shape(array.scatter, array.getitem, np.concatenate, registry.FUNCTIONS)
    _arrays.setup_elements(B.node_drops_capsule(), _trace.rerun_count, _trace)
    _arrays.setup_views(array._reshape_vjp, array._transpose_vjp, np.reshape)
    B.set_array_add(_arrays.add_capsule())  # the sweep's sum of array adjoints
    # np.exp(x) of a float dual: numpy's loop on its value and the table's derivative in C
    B.set_numpy_unary(_arrays.scalar_unary_capsule(),
                      {registry.SCALAR_UFUNCS[UFUNCS[c]]: c for c in _arrays.SCALAR_UNARY})
    # the sweep's pullback of the fast bindings; release_memory empties its kept arrays
    B.set_array_hooks(_arrays.pull_capsule(), _arrays.release)
    array.SUM_AXIS = _arrays.sum_axis  # unbroadcast's sum over one axis, einsum's bits
    array.BROADCAST_VIEW = _arrays.broadcast_view  # broadcast_to's view, by numpy's C API
    elementwise.BINARY = _arrays.binary  # the rules' broadcast products, numpy's bits
    reductions.EXTREMUM_WEIGHTS = _arrays.extremum_weights  # max/min's weights in C
    sum_rows = _sums_as_numpy()
    if sum_rows:
        array.SUM_ROWS = _arrays.sum_rows  # np.sum over the last axis, numpy's bits
    # np.sum, np.max, np.min of an array dual in C (their values numpy's calls, as above)
    _arrays.setup_reductions({np.sum: 1, np.max: 2, np.amax: 2, np.min: 3, np.amin: 3, np.mean: 4},
                             {m: (f, getattr(array.ArrayDual, m))
                              for m, f in (("sum", np.sum), ("max", np.max), ("min", np.min),
                                           ("mean", np.mean))},
                             reductions._sum_vjp, reductions._choose_vjp, args.axes_of,
                             np.maximum.reduce, np.minimum.reduce, np.max, np.min, np.float64,
                             sum_rows)


def _sums_as_numpy():
    """Whether ``_arrays.sum_rows`` adds as this numpy does. Its order is numpy's pairwise
    summation, numpy's own choice: should another numpy sum otherwise, numpy does the sums."""
    rng = np.random.default_rng(0)
    for m in (1, 7, 8, 9, 17, 130, 300):
        x = rng.standard_normal((2, m)) * 10.0 ** rng.integers(-8, 8, (2, m))
        r = _arrays.sum_rows(x, (1,), False)
        if r is None or r.tobytes() != np.add.reduce(x, 1).tobytes():
            return False
    return True


if _arrays is not None:
    _install()
    # DELTAAD_ARRAY_FAST=0: the Python path (to measure the fast path, or to rule it out)
    if os.environ.get("DELTAAD_ARRAY_FAST", "").strip().lower() in ("0", "false", "no", "off"):
        _arrays.set_enabled(False)


def enabled():
    """Whether the compiled fast path is in use."""
    return _arrays is not None and _arrays.is_enabled()


def set_enabled(flag):
    """Switch the fast path on or off (for comparing it with the Python path); returns the
    previous setting. Without the extension it stays off."""
    if _arrays is None:
        return False
    return _arrays.set_enabled(flag)
