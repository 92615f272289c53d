"""scipy.interpolate's interpolants evaluated at dual points: ``CubicSpline``, ``PPoly``,
``BPoly``, ``PchipInterpolator``, ``Akima1DInterpolator``, ``BSpline`` (``make_interp_spline``,
``splrep``'s splines), ``interp1d`` and ``RegularGridInterpolator``.

A lookup table or a fitted spline inside a model is evaluated where the model's parameters
say: ``CubicSpline(xs, ys)(x)`` with ``x`` a dual. scipy evaluates in C on float64. An
interpolant knows its own derivatives -- ``f(x, nu)`` is the ``nu``-th -- so evaluating one at
a dual is a primitive in the style of ``lift1 sin cos``: the value is scipy's ``f(x, nu)``,
the derivative ``f(x, nu + 1)`` called on ``x``'s value, which is again this primitive where
that value is a dual of an outer level, so every order is scipy's own piecewise derivative
(with its convention at breakpoints: the interval to the right). ``interp1d`` goes through
these for its spline kinds, computes ``kind='linear'`` as scipy does on the duals, and its
piecewise-constant kinds have derivative 0; so does ``RegularGridInterpolator`` with its
``'linear'`` and ``'nearest'`` methods. Out-of-range points follow scipy (``nan`` or the
fill value, derivative 0 there; extrapolation differentiates the end pieces). The table's
data itself (``ys``) must be plain: an interpolant built from duals raises where scipy first
converts them.
"""

import sys

from deltaad._plainnumpy import np

from ..trace import is_dual
from ..trace import value as strip
from . import registry
from .array import Primitive, apply
from .registry import holds_dual
from .scipy_late import operand, revalue


def _x_first(out, x_ndim, axis):
    """scipy's result with the evaluation points' axes (which scipy put at ``axis``) first."""
    if axis == 0 or np.ndim(out) == x_ndim:
        return out
    idx = list(range(np.ndim(out)))
    return np.transpose(out, idx[axis:axis + x_ndim] + idx[:axis] + idx[axis + x_ndim:])


def _x_back(out, x_ndim, axis):
    """The inverse of :func:`_x_first`: scipy's layout."""
    if axis == 0 or np.ndim(out) == x_ndim:
        return out
    idx = list(range(np.ndim(out)))
    return np.transpose(out, idx[x_ndim:x_ndim + axis] + idx[:x_ndim] + idx[x_ndim + axis:])


def _evaluate(x, f, nu, extrapolate, axis, degree=None):
    """``f(x, nu)`` (the original scipy method, bound) with x's axes first."""
    return _x_first(f(x, nu, extrapolate), np.ndim(x), axis)


def _slope(out, x, f, nu, extrapolate, axis, degree):
    """d/dx of ``f(x, nu)``: ``f(x, nu + 1)``, on ``x`` (plain, or a lower level's dual)."""
    if degree is not None and nu + 1 > degree:
        return np.zeros(np.shape(out))
    return _call(f, x, nu + 1, extrapolate, axis, degree)


def _vjp(out, vals, on, f, nu, extrapolate, axis, degree):
    (x,) = vals
    d = _slope(out, x, f, nu, extrapolate, axis, degree)
    nx = np.ndim(x)

    def rule(ct):
        g = ct * d
        if np.ndim(g) > nx:
            g = np.sum(g, axis=tuple(range(nx, np.ndim(g))))
        return (g,)

    return rule


def _jvp(out, vals, tans, f, nu, extrapolate, axis, degree):
    (x,) = vals
    (t,) = tans
    d = _slope(out, x, f, nu, extrapolate, axis, degree)
    extra = np.ndim(d) - np.ndim(x)
    return d * np.reshape(t, np.shape(t) + (1,) * extra)


EVALUATE = Primitive("scipy.interpolate evaluation", _evaluate, _vjp, _jvp)


def _call(f, x, nu, extrapolate, axis, degree):
    """The interpolant ``f`` (scipy's bound method) at ``x``, a dual or plain, x's axes first."""
    if not is_dual(x):
        return _evaluate(x, f, nu, extrapolate, axis)
    return apply(EVALUATE, (x,), {"f": f, "nu": nu, "extrapolate": extrapolate, "axis": axis,
                                  "degree": degree})


def _method(original, name, degree_of):
    """``__call__(self, x, nu=0, extrapolate=None)`` of an interpolant class, for dual ``x``."""

    def call(self, x, nu=0, extrapolate=None):
        if not holds_dual(x):
            return original(self, x, nu, extrapolate)
        if holds_dual(getattr(self, "c", None)):
            raise NotImplementedError("deltaad: %s built from dual numbers is not supported; "
                                      "build the interpolant from plain data" % name)
        x = operand(x)
        axis = getattr(self, "axis", 0)
        out = _call(original.__get__(self), x, nu, extrapolate, axis, degree_of(self))
        return _x_back(out, np.ndim(strip(x)), axis)  # (the primitive's value is scipy's)

    return call


def _interp1d_call(original):
    def call(self, x):
        if not holds_dual(x):
            return original(self, x)
        ref = original(self, strip(operand(x)))
        xd = operand(x)
        shape = np.shape(strip(xd))
        flat = np.reshape(xd, (-1,))
        xv = np.reshape(strip(xd), (-1,))
        if self._kind == "linear":
            ys = self._y
            hi = np.clip(np.searchsorted(self.x, xv), 1, len(self.x) - 1)
            lo = hi - 1
            slope = (ys[hi] - ys[lo]) / (self.x[hi] - self.x[lo])[:, None]
            y = slope * (flat - self.x[lo])[:, None] + ys[lo]
        elif getattr(self, "_spline", None) is not None:
            y = self._spline(flat)
        else:  # nearest, previous, next, zero: piecewise constant
            return ref
        if not self._extrapolate:
            below, above = self._check_bounds(xv)
            fill = np.where(below[:, None], self._fill_value_below,
                            np.where(above[:, None], self._fill_value_above, 0.0))
            y = np.where((below | above)[:, None], fill, y)
        return revalue(self._finish_y(y, shape), ref, "scipy.interpolate.interp1d")

    return call


def _grid_call(original):
    """``RegularGridInterpolator.__call__``: ``method='linear'`` computed as scipy computes
    it (the corners of the cell, weighted by products of normalised distances) on the duals;
    ``'nearest'`` is piecewise constant; the spline methods raise, naming them."""

    def call(self, xi, method=None, *, nu=None):
        if not holds_dual(xi):
            return original(self, xi, method, nu=nu)
        ndim = len(self.grid)
        if isinstance(xi, (tuple, list)) and len(xi) == ndim and \
                any(np.ndim(strip(e)) > 0 for e in xi):
            xi = np.stack([operand(e) for e in xi], axis=-1)  # scipy's tuple of coordinates
        xd = operand(xi)
        xv = strip(xd)
        ref = original(self, xv, method, nu=nu)  # scipy's checks, errors and value
        method = self.method if method is None else method
        if method == "nearest":
            return ref
        if method != "linear":
            raise NotImplementedError(
                "deltaad: scipy.interpolate.RegularGridInterpolator(method=%r) at dual points "
                "is not supported; use method='linear', or a CubicSpline / make_interp_spline "
                "along each axis" % (method,))
        flat = np.reshape(xd, (-1, ndim))
        xvf = np.reshape(xv, (-1, ndim))
        indices, _ = self._find_indices(xvf.T)
        extra = (slice(None),) + (None,) * (np.ndim(self.values) - ndim)
        ys = [(flat[:, i] - g[k]) / (g[k + 1] - g[k])
              for i, (g, k) in enumerate(zip(self.grid, indices))]
        total = None
        for corner in np.ndindex(*(2,) * ndim):
            weight = None
            for i, c in enumerate(corner):
                w = ys[i] if c else 1.0 - ys[i]
                weight = w if weight is None else weight * w
            term = np.asarray(self.values[tuple(k + c for k, c in zip(indices, corner))]) * \
                weight[extra]
            total = term if total is None else total + term
        if not self.bounds_error and self.fill_value is not None:
            outside = self._find_out_of_bounds(xvf.T)
            total = np.where(outside[extra], self.fill_value, total)
        out = np.reshape(total, np.shape(ref))  # (a single point of shape (ndim,) gives (1,))
        return revalue(out, ref, "scipy.interpolate.RegularGridInterpolator")

    return call


BUILDERS = ("CubicSpline", "CubicHermiteSpline", "PchipInterpolator", "Akima1DInterpolator",
            "PPoly", "BPoly", "BSpline", "interp1d", "make_interp_spline", "splrep",
            "RegularGridInterpolator")
_FIX = ("build it from plain data (deltaad.value), or interpolate the duals with numpy "
        "(np.interp differentiates in the table's values too)")


def _refusing(original, name):
    """``original`` (a class's ``__init__`` or a function) raising an error naming ``name``
    when its data holds duals, instead of scipy's first float conversion's message."""

    def f(*args, **kwargs):
        if any(holds_dual(a) for a in args) or any(holds_dual(a) for a in kwargs.values()):
            raise NotImplementedError("deltaad: scipy.interpolate.%s built from dual numbers "
                                      "is not supported (deltaad differentiates an "
                                      "interpolant's evaluation point, not its data); %s"
                                      % (name, _FIX))
        return original(*args, **kwargs)

    f.__name__, f.__qualname__, f.__doc__ = original.__name__, original.__qualname__, \
        original.__doc__
    f.__wrapped__ = f.deltaad_original = original
    return f


def install(module):
    """Replace the interpolants' ``__call__`` (once), on the classes themselves: every
    subclass and every instance, made before or after, evaluates at duals; their builders
    refuse dual data by name."""
    interp = sys.modules.get("scipy.interpolate._interpolate")
    bsplines = sys.modules.get("scipy.interpolate._bsplines")
    for name in BUILDERS:
        obj = getattr(module, name, None)
        if isinstance(obj, type):
            if "__init__" in vars(obj) and not hasattr(obj.__init__, "deltaad_original"):
                obj.__init__ = _refusing(obj.__init__, name)
        elif obj is not None and not hasattr(obj, "deltaad_original"):
            setattr(module, name, _refusing(obj, name))
    if interp is not None:
        base = interp._PPolyBase
        if not hasattr(base.__call__, "deltaad_original"):
            degree = lambda self: self.c.shape[0] - 1  # noqa: E731
            _patch(base, _method(base.__call__, "scipy.interpolate.PPoly", degree))
        if not hasattr(interp.interp1d.__call__, "deltaad_original"):
            _patch(interp.interp1d, _interp1d_call(interp.interp1d.__call__))
    grid = sys.modules.get("scipy.interpolate._rgi")
    if grid is not None and not hasattr(grid.RegularGridInterpolator.__call__,
                                        "deltaad_original"):
        cls = grid.RegularGridInterpolator
        _patch(cls, _grid_call(cls.__call__))
    if bsplines is not None and not hasattr(bsplines.BSpline.__call__, "deltaad_original"):
        _patch(bsplines.BSpline, _method(bsplines.BSpline.__call__,
                                         "scipy.interpolate.BSpline", lambda self: self.k))


def _patch(cls, call):
    original = cls.__call__
    call.__name__, call.__qualname__, call.__doc__ = "__call__", original.__qualname__, \
        original.__doc__
    call.__wrapped__ = call.deltaad_original = original
    cls.__call__ = call


registry.watch("scipy.interpolate", install)
