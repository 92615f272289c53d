"""``deltaad.statistics``: Python's ``statistics`` module, differentiable.

``statistics`` computes means and variances exactly, through fractions
(``as_integer_ratio``), which a dual cannot enter. Here each function of the data's moments is
a primitive of n reals (the general primitive of Krawiec et al.): its value is
``statistics``' own on the plain values, to the bit, with its errors (``StatisticsError`` for
too little data); its partials are the textbook ones, written with arithmetic on the values,
so they differentiate again. On plain numbers every function *is* ``statistics``'.

``mean``, ``fmean`` (and its weights), ``geometric_mean``, ``harmonic_mean``, ``variance``,
``stdev``, ``pvariance``, ``pstdev`` (and their given centre), ``covariance``, ``correlation``
(Pearson's) and ``linear_regression`` are here; ``median``, its ``_low``/``_high`` forms,
``mode`` and ``quantiles`` pick or interpolate values by comparisons and arithmetic, which duals
do as floats, so ``statistics``' own run on them. While a differentiation is open, ``import
statistics`` code gets these (:mod:`deltaad.stdmath`).
"""

import statistics as _statistics
import types as _types
from statistics import *  # noqa: F401,F403 (every name of the module; the differentiable ones below)
from statistics import LinearRegression as _LinearRegression

from ._backend import B as _B
from . import math as _dmath
from .math import _has_dual, _open_value, _scalar

_lift = _B.lift

# statistics' own functions, from a copy of its namespace that nothing switches (the module
# answers look-ups with these functions while a differentiation is open)
_stats = _types.ModuleType("statistics")
_stats.__dict__.update(vars(_statistics))


def _items(name, data):
    items = list(data)
    return items, _has_dual(items)


def _plain_values(items):
    return [_open_value(x) for x in items]


def _lifted(name, items, value, partials):
    """The primitive of ``items`` (duals and numbers) with ``value(*vs)`` and
    ``partials(*vs)``."""
    return _lift([_scalar(name, x) for x in items], value, partials)


def _centre(vs, c):
    return sum(vs) / len(vs) if c is None else c


def mean(data):
    """``statistics.mean``: exact, rounded once; on duals, derivative 1/n for each point."""
    items, duals = _items("mean", data)
    if not duals:
        return _stats.mean(items)
    _stats.mean(_plain_values(items))  # statistics' errors
    n = len(items)
    return _lifted("mean", items, lambda *vs: mean(vs), lambda *vs: (1.0 / n,) * n)


def fmean(data, weights=None):
    """``statistics.fmean``, with or without weights, differentiable in both."""
    items, duals = _items("fmean", data)
    if weights is None:
        if not duals:
            return _stats.fmean(items)
        _stats.fmean(_plain_values(items))
        n = len(items)
        return _lifted("fmean", items, lambda *vs: fmean(vs), lambda *vs: (1.0 / n,) * n)
    ws, wduals = _items("fmean", weights)
    if not (duals or wduals):
        return _stats.fmean(items, ws)
    _stats.fmean(_plain_values(items), _plain_values(ws))
    n = len(items)

    def partials(*vs):
        x, w = vs[:n], vs[n:]
        total = sum(w)
        m = sum(a * b for a, b in zip(x, w)) / total
        return tuple(b / total for b in w) + tuple((a - m) / total for a in x)

    return _lifted("fmean", items + ws, lambda *vs: fmean(vs[:n], vs[n:]), partials)


def geometric_mean(data):
    """``statistics.geometric_mean``; on duals, d/dx_i = g / (n x_i)."""
    items, duals = _items("geometric_mean", data)
    if not duals:
        return _stats.geometric_mean(items)
    _stats.geometric_mean(_plain_values(items))
    n = len(items)

    def partials(*vs):
        g = geometric_mean(vs)
        return tuple(g / (n * v) for v in vs)

    return _lifted("geometric_mean", items, lambda *vs: geometric_mean(vs), partials)


def harmonic_mean(data, weights=None):
    """``statistics.harmonic_mean``, with or without weights, differentiable in both."""
    items, duals = _items("harmonic_mean", data)
    ws, wduals = _items("harmonic_mean", [1.0] * len(items) if weights is None else weights)
    if not (duals or wduals):
        return _stats.harmonic_mean(items, weights)
    _stats.harmonic_mean(_plain_values(items),
                         None if weights is None else _plain_values(ws))
    n = len(items)

    def value(*vs):
        return harmonic_mean(vs[:n], None if weights is None else vs[n:])

    def partials(*vs):
        x, w = vs[:n], vs[n:]
        total = sum(w)
        h = total / sum(b / a for a, b in zip(x, w))
        return tuple(h * h * b / (total * a * a) for a, b in zip(x, w)) + \
            tuple(h / total - h * h / (total * a) for a in x)

    return _lifted("harmonic_mean", items + ws, value, partials)


def _spread(name, population, root):
    """variance, stdev, pvariance, pstdev: the sum of squares about the mean (or the given
    centre) over n - 1 (or n), and its square root."""
    plain_fn = getattr(_stats, name)

    def fn(data, centre=None):
        items, duals = _items(name, data)
        if not (duals or _has_dual([centre])):
            return plain_fn(items, centre)
        plain_fn(_plain_values(items), _open_value(centre))  # statistics' errors
        n = len(items)
        given = centre is not None
        operands = items + ([centre] if given else [])

        def value(*vs):
            return fn(vs[:n], vs[n] if given else None)

        def partials(*vs):
            x = vs[:n]
            c = _centre(x, vs[n] if given else None)
            scale = 2.0 / (n if population else n - 1)
            ds = [scale * (a - c) for a in x]
            if given:  # the centre as given: d/dc of sum((x - c)^2) / (n - 1)
                ds.append(-scale * sum(a - c for a in x))
            if root:
                s = value(*vs)
                ds = [d / (2.0 * s) for d in ds]
            return tuple(ds)

        return _lifted(name, operands, value, partials)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "``statistics.%s``, differentiable in the data and the given centre." % name
    return fn


variance = _spread("variance", False, False)
stdev = _spread("stdev", False, True)
pvariance = _spread("pvariance", True, False)
pstdev = _spread("pstdev", True, True)


def _pairs(name, x, y):
    xs, xd = _items(name, x)
    ys, yd = _items(name, y)
    return xs, ys, xd or yd


def covariance(x, y, /):
    """``statistics.covariance``; d/dx_i = (y_i - mean(y)) / (n - 1), and likewise in y."""
    xs, ys, duals = _pairs("covariance", x, y)
    if not duals:
        return _stats.covariance(xs, ys)
    _stats.covariance(_plain_values(xs), _plain_values(ys))
    n = len(xs)

    def partials(*vs):
        a, b = vs[:n], vs[n:]
        ma, mb = sum(a) / n, sum(b) / n
        return tuple((v - mb) / (n - 1) for v in b) + tuple((v - ma) / (n - 1) for v in a)

    return _lifted("covariance", xs + ys, lambda *vs: covariance(vs[:n], vs[n:]), partials)


def _moments(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    da = [v - ma for v in a]
    db = [v - mb for v in b]
    sxy = sum(p * q for p, q in zip(da, db))
    sxx = sum(p * p for p in da)
    syy = sum(q * q for q in db)
    return ma, mb, da, db, sxy, sxx, syy


def correlation(x, y, /, **kwargs):
    """``statistics.correlation`` (Pearson's): d r/d x_i = (dy_i - r sxy/sxx dx_i) /
    sqrt(sxx syy), with dx, dy the deviations from the means."""
    xs, ys, duals = _pairs("correlation", x, y)
    if not duals or kwargs.get("method", "linear") != "linear":
        return _stats.correlation(xs, ys, **kwargs)
    _stats.correlation(_plain_values(xs), _plain_values(ys), **kwargs)
    n = len(xs)

    def partials(*vs):
        _, _, da, db, sxy, sxx, syy = _moments(vs[:n], vs[n:])
        d = _dmath.sqrt(sxx * syy)
        return tuple((q - sxy / sxx * p) / d for p, q in zip(da, db)) + \
            tuple((p - sxy / syy * q) / d for p, q in zip(da, db))

    return _lifted("correlation", xs + ys, lambda *vs: correlation(vs[:n], vs[n:], **kwargs),
                   partials)


def linear_regression(x, y, /, *, proportional=False):
    """``statistics.linear_regression``: slope and intercept, each differentiable in x and y."""
    xs, ys, duals = _pairs("linear_regression", x, y)
    if not duals:
        return _stats.linear_regression(xs, ys, proportional=proportional)
    _stats.linear_regression(_plain_values(xs), _plain_values(ys), proportional=proportional)
    n = len(xs)
    operands = xs + ys

    def fit(*vs):
        return linear_regression(vs[:n], vs[n:], proportional=proportional)

    if proportional:
        def slope_partials(*vs):
            a, b = vs[:n], vs[n:]
            sxx = sum(p * p for p in a)
            m = sum(p * q for p, q in zip(a, b)) / sxx
            return tuple((q - 2.0 * m * p) / sxx for p, q in zip(a, b)) + \
                tuple(p / sxx for p in a)

        slope = _lifted("linear_regression", operands, lambda *vs: fit(*vs).slope,
                        slope_partials)
        return _LinearRegression(slope=slope, intercept=0.0)

    def slope_partials(*vs):
        _, _, da, db, sxy, sxx, _ = _moments(vs[:n], vs[n:])
        m = sxy / sxx
        return tuple((q - 2.0 * m * p) / sxx for p, q in zip(da, db)) + \
            tuple(p / sxx for p in da)

    def intercept_partials(*vs):
        ma, _, da, db, sxy, sxx, _ = _moments(vs[:n], vs[n:])
        m = sxy / sxx
        ds = slope_partials(*vs)
        return tuple(-ma * d - m / n for d in ds[:n]) + tuple(1.0 / n - ma * d for d in ds[n:])

    slope = _lifted("linear_regression", operands, lambda *vs: fit(*vs).slope, slope_partials)
    intercept = _lifted("linear_regression", operands, lambda *vs: fit(*vs).intercept,
                        intercept_partials)
    return _LinearRegression(slope=slope, intercept=intercept)
