"""scipy.stats's distributions on duals: ``norm.logpdf(x, mu, sigma)`` with dual ``mu``.

scipy's public methods (``rv_continuous.logpdf`` and its siblings) cannot run on duals: they
write their result into a float array (``np.place``), which would drop a derivative. Each
distribution's *private* methods (``_logpdf``, ``_cdf``, ...) are ordinary numpy and
scipy.special arithmetic, which deltaad differentiates. So when scipy.stats is imported (deltaad
never imports it), the public methods of ``rv_continuous`` and ``rv_discrete`` are replaced by
versions that, when an argument holds a dual, redo the public method's bookkeeping -- standardise
by ``loc`` and ``scale``, check the parameters and the support on the plain values -- and compute
the private method on the duals; on plain arguments scipy's own method runs, unchanged. Frozen
distributions (``norm(mu, sigma).logpdf(x)``) call these methods and follow.

Choices, as scipy's values: outside the support the constant scipy returns (0, 1, -inf, the
support's bounds for ``ppf``; derivative 0), invalid parameters ``nan``. A distribution whose
private method itself cannot run on duals (one written with ``scipy._lib._util._lazywhere``,
which also places into float arrays) raises the usual error naming the call.
"""

import sys

from deltaad._plainnumpy import np

from ..trace import value as strip
from . import registry
from .array import asarray, at, getitem
from .registry import holds_dual

_INF = float("inf")

# method -> (private method, support test, value below the support, value above it, how the
# private method's result is finished with scale); "closed": pdf-like, "open": cdf-like.
CONTINUOUS = {
    "pdf": ("_pdf", "closed", 0.0, 0.0, "divide"),
    "logpdf": ("_logpdf", "closed", -_INF, -_INF, "log"),
    "cdf": ("_cdf", "open", 0.0, 1.0, None),
    "logcdf": ("_logcdf", "open", -_INF, 0.0, None),
    "sf": ("_sf", "open", 1.0, 0.0, None),
    "logsf": ("_logsf", "open", 0.0, -_INF, None),
}
QUANTILES = {"ppf": "_ppf", "isf": "_isf"}  # isf(q) = ppf(1 - q): bounds swap
DISCRETE = {"pmf": "_pmf", "logpmf": "_logpmf"}
# cdf-like methods of discrete distributions: (private method, value below the support, above
# it, clipped to [0, 1] as scipy does)
DISCRETE_CUMULATIVE = {
    "cdf": ("_cdf", 0.0, 1.0, True),
    "sf": ("_sf", 1.0, 0.0, True),
    "logcdf": ("_logcdf", -_INF, 0.0, False),
    "logsf": ("_logsf", 0.0, -_INF, False),
}


def _any_dual(args, kwds):
    return any(holds_dual(a) for a in args) or any(holds_dual(v) for v in kwds.values())


def _bool(c):
    """scipy's checks answer ``1`` for "no parameter to check": a boolean array, always."""
    return np.asarray(c, dtype=bool)


def _values(a):
    """The plain values of an operand (an array dual's value, a scalar dual's value)."""
    v = strip(a)
    return np.asarray(v)


def _flat(operands):
    """The operands broadcast together and raveled, as scipy's ``argsreduce`` hands them to the
    private methods (some of which index them or read ``.shape``), and their common shape."""
    shape = np.broadcast_shapes(*[np.shape(_values(o)) for o in operands])
    return [np.ravel(np.broadcast_to(o, shape)) for o in operands], shape


def _take(operands, idx, n):
    """The operands at the indices ``idx`` (all of them when ``idx`` is every index)."""
    if len(idx) == n:
        return operands
    return [o[idx] for o in operands]


def _assemble(n, shape, base, pieces):
    """A result of ``shape``: the plain constants ``base`` (flat), with ``values`` at ``idx``
    for each ``(idx, values)`` of ``pieces`` -- each piece computed only where it applies, as
    scipy does, so that nothing computed outside its domain (a ``nan`` partial) can reach a
    derivative. 0-d results are scalars, as scipy returns them."""
    out = base
    for idx, v in pieces:
        if len(idx) == n:
            out = v
        elif len(idx):
            out = at(out)[idx].set(v)
    out = np.reshape(out, shape)
    if np.ndim(strip(out)) == 0:
        return getitem(asarray(out), ())
    return out


def _numerical_quantile(dist, private, q, *args):
    """scipy's generic ``_ppf`` (and ``_isf``, ``1 - q`` through it) on duals: its
    ``np.vectorize`` would convert a dual to a float, so ``_ppf_single`` (brentq on the cdf,
    whose root deltaad differentiates by the implicit function theorem) runs per element."""
    q = 1.0 - q if private == "_isf" else q
    n = int(np.size(_values(q)))
    return asarray([dist._ppf_single(q[i], *[a[i] for a in args]) for i in range(n)])


def _generic(dist, private):
    """Whether ``dist``'s quantile is scipy's generic numerical one (``rv_continuous._ppf``)."""
    base = sys.modules["scipy.stats"].rv_continuous
    own = getattr(type(dist), private, None)
    return own is getattr(base, private, None) and type(dist)._ppf is base._ppf


def _private(dist, private, method, *args):
    """``dist.<private>(*args)`` on duals; numpy's own error from inside scipy's code (an object
    loop that has no method for a dual, say) becomes one naming the call the user wrote."""
    try:
        if private in ("_ppf", "_isf") and _generic(dist, private):
            return _numerical_quantile(dist, private, *args)
        return getattr(dist, private)(*args)
    except TypeError as exc:
        if "deltaad" in str(exc) or "scipy.special" in str(exc):
            raise  # already names the operation and the fix
        raise NotImplementedError(
            "deltaad: scipy.stats.%s.%s on dual numbers is not supported: scipy's private "
            "method %s computes with numpy code that cannot run on duals (%s: %s). Call it on "
            "plain values, or write the distribution's formula with numpy functions"
            % (dist.name, method, private, type(exc).__name__, str(exc).split("\n")[0])) \
            from exc


def _continuous(method):
    private, support, below, above, scaled = CONTINUOUS[method]

    def evaluate(dist, x, *args, **kwds):
        args, loc, scale = dist._parse_args(*args, **kwds)
        x, loc, scale = asarray(x), asarray(loc), asarray(scale)
        args = tuple(asarray(a) for a in args)
        with np.errstate(all="ignore"):
            (y, scale, *args), shape = _flat([(x - loc) / scale, scale, *args])
            vargs = [_values(a) for a in args]
            yv, sv = _values(y), _values(scale)
            n = yv.size
            b = dist._get_support(*vargs)[1]
            cond0 = _bool(dist._argcheck(*vargs)) & (sv > 0)
            mask = dist._support_mask if support == "closed" else dist._open_support_mask
            cond = cond0 & _bool(mask(yv, *vargs))
            base = np.where(yv >= b, above, below) * np.ones(n)
            base[~cond0 | np.isnan(yv)] = dist.badvalue
            idx = np.flatnonzero(cond)
            y, scale, *args = _take([y, scale, *args], idx, n)
            r = _private(dist, private, method, y, *args)
            if scaled == "divide":
                r = r / scale
            elif scaled == "log":
                r = r - np.log(scale)
        return _assemble(n, shape, base, [(idx, r)])

    return evaluate


def _quantile(method):
    private = QUANTILES[method]

    def evaluate(dist, q, *args, **kwds):
        args, loc, scale = dist._parse_args(*args, **kwds)
        q, loc, scale = asarray(q), asarray(loc), asarray(scale)
        args = tuple(asarray(a) for a in args)
        with np.errstate(all="ignore"):
            (q, scale, loc, *args), shape = _flat([q, scale, loc, *args])
            vargs = [_values(a) for a in args]
            qv, sv, lv = _values(q), _values(scale), _values(loc)
            n = qv.size
            a, b = dist._get_support(*vargs)
            if method == "isf":
                a, b = b, a
            cond0 = _bool(dist._argcheck(*vargs)) & (sv > 0) & (lv == lv)
            pieces = []
            for where, bound in (((0 < qv) & (qv < 1), None), (qv == 0, a), (qv == 1, b)):
                idx = np.flatnonzero(cond0 & where)
                if not len(idx):
                    continue
                sc, lc, qc, *ac = _take([scale, loc, q, *args], idx, n)
                if bound is None:
                    pieces.append((idx, _private(dist, private, method, qc, *ac) * sc + lc))
                else:
                    bc = np.broadcast_to(bound, (n,))[idx]
                    pieces.append((idx, bc * sc + lc))
        return _assemble(n, shape, np.full(n, dist.badvalue), pieces)

    return evaluate


def _discrete(method):
    if method in DISCRETE_CUMULATIVE:
        private, below, above, clip = DISCRETE_CUMULATIVE[method]
    else:
        private, above, clip = DISCRETE[method], None, method == "pmf"
        below = 0.0 if method == "pmf" else -_INF

    def evaluate(dist, k, *args, **kwds):
        args, loc, _ = dist._parse_args(*args, **kwds)
        if holds_dual(k) or holds_dual(loc):
            raise TypeError(
                "scipy.stats %s.%s: the count k and loc of a discrete distribution are integers "
                "and have no derivative; pass them as plain numbers (the shape parameters may "
                "be duals)" % (dist.name, method))
        k = np.asarray(k) - np.asarray(loc)
        args = tuple(asarray(a) for a in args)
        with np.errstate(all="ignore"):
            (k, *args), shape = _flat([k, *args])
            vargs = [_values(a) for a in args]
            n = k.size
            a, b = dist._get_support(*vargs)
            cond0 = _bool(dist._argcheck(*vargs))
            if above is None:  # pmf, logpmf: at the support's points
                cond = cond0 & (k >= a) & (k <= b) & _bool(dist._nonzero(k, *vargs))
                base = np.full(n, below)
            else:  # as scipy: below the support, at or above its end, inside
                cond = cond0 & (k >= a) & (k < b) & np.isfinite(k)
                base = np.where(k >= b, above, below) * np.ones(n)
            base[~cond0 | np.isnan(k)] = dist.badvalue
            idx = np.flatnonzero(cond)
            k, *args = _take([k, *args], idx, n)
            r = _private(dist, private, method, k, *args)
            if clip:
                r = np.clip(r, 0, 1)
        return _assemble(n, shape, base, [(idx, r)])

    return evaluate


def _dispatching(original, impl):
    def method(self, *args, **kwds):
        if _any_dual(args, kwds):
            return impl(self, *args, **kwds)
        return original(self, *args, **kwds)

    method.__name__ = original.__name__
    method.__qualname__ = original.__qualname__
    method.__doc__ = original.__doc__
    method.deltaad_original = original
    return method


# The private interface these rules rely on; a scipy without it keeps its own methods.
_NEEDS = ("_get_support", "_argcheck", "_support_mask", "_open_support_mask")


def install(module):
    """Replace the public methods of scipy's distribution base classes (once)."""
    cont = getattr(module, "rv_continuous", None)
    disc = getattr(module, "rv_discrete", None)
    if cont is None or not all(hasattr(cont, n) for n in _NEEDS):
        return
    for name in CONTINUOUS:
        _patch(cont, name, _continuous(name))
    for name in QUANTILES:
        _patch(cont, name, _quantile(name))
    if disc is not None and hasattr(disc, "_nonzero"):
        for name in tuple(DISCRETE) + tuple(DISCRETE_CUMULATIVE):
            _patch(disc, name, _discrete(name))


def _patch(cls, name, impl):
    original = cls.__dict__.get(name)
    if original is None or hasattr(original, "deltaad_original"):
        return
    setattr(cls, name, _dispatching(original, impl))


def _apply_where(original):
    """scipy's ``apply_where(cond, args, f1, f2, fill_value=)`` evaluates ``f1`` only where
    ``cond`` holds by placing results into a float array. On duals: ``f1`` on the elements
    where ``cond`` holds, ``f2`` (or the fill) on the others, assembled functionally."""

    def apply_where(cond, args, f1, f2=None, /, *, fill_value=None, xp=None):
        many = isinstance(args, tuple)
        if not (holds_dual(list(args) if many else args) or holds_dual(fill_value)):
            return original(cond, args, f1, f2, fill_value=fill_value, xp=xp)
        if (f2 is None) == (fill_value is None):
            raise TypeError("Exactly one of `fill_value` or `f2` must be given.")
        c = np.asarray(strip(cond), dtype=bool)
        operands = [asarray(a) for a in (args if many else (args,))]
        with np.errstate(all="ignore"):
            if f2 is None:
                operands.append(asarray(fill_value))
            (c, *operands), shape = _flat([c, *operands])
            n = c.size
            taken, other = np.flatnonzero(c), np.flatnonzero(~c)
            pieces = []
            if len(taken):
                pieces.append((taken, f1(*_take(operands[:len(operands) - (f2 is None)], taken, n))))
            if len(other):
                pieces.append((other, f2(*_take(operands, other, n)) if f2 is not None
                               else _take(operands[-1:], other, n)[0]))
            dtype = np.result_type(*[_values(v) for _, v in pieces]) if pieces else float
            out = _assemble(n, shape, np.zeros(n, dtype), pieces)
        return out if shape else asarray(out)

    apply_where.__doc__ = original.__doc__
    apply_where.deltaad_original = original
    return apply_where


def install_apply_where(module):
    f = getattr(module, "apply_where", None)
    if f is not None and not hasattr(f, "deltaad_original"):
        module.apply_where = _apply_where(f)


def _lazyselect(original):
    """scipy's ``_lazyselect(condlist, choicelist, arrays, default)`` (``np.select`` computing
    each choice only where its condition holds) places the choices into a float array. On
    duals: each function on the elements where its condition holds, assembled functionally (a
    later condition overriding an earlier one, as ``np.place`` in turn does)."""

    def lazyselect(condlist, choicelist, arrays, default=0):
        if not holds_dual(list(arrays)) and not holds_dual(default):
            return original(condlist, choicelist, arrays, default)
        operands = [asarray(a) for a in arrays]
        conds = [np.asarray(strip(c), dtype=bool) for c in condlist]
        with np.errstate(all="ignore"):
            flat, shape = _flat(operands + conds)
            operands, conds = flat[:len(operands)], flat[len(operands):]
            n = int(np.prod(shape))
            pieces = []
            for func, cond in zip(choicelist, conds):
                idx = np.flatnonzero(cond)
                if len(idx):
                    pieces.append((idx, func(*_take(operands, idx, n))))
            base = np.full(n, strip(default), dtype=float) if not holds_dual(default) else \
                np.broadcast_to(asarray(default), (n,))
            return _assemble(n, shape, base, pieces) if shape else \
                asarray(_assemble(n, shape, base, pieces))

    lazyselect.__doc__ = original.__doc__
    lazyselect.deltaad_original = original
    return lazyselect


def _install_lazyselect(module):
    f = getattr(module, "_lazyselect", None)
    if f is not None and not hasattr(f, "deltaad_original"):
        module._lazyselect = _lazyselect(f)


def _rebind_lazyselect(module):
    """A module that bound ``_lazyselect`` before deltaad was imported gets the new one."""
    util = sys.modules.get("scipy._lib._util")
    f = getattr(module, "_lazyselect", None)
    new = getattr(util, "_lazyselect", None) if util is not None else None
    if f is not None and new is not None and getattr(new, "deltaad_original", None) is f:
        module._lazyselect = new


MODULE = "scipy.stats._distn_infrastructure"
METHODS = tuple(CONTINUOUS) + tuple(QUANTILES) + tuple(DISCRETE) + tuple(DISCRETE_CUMULATIVE)
registry.watch(MODULE, install)
registry.watch("scipy._lib.array_api_extra", install_apply_where)
registry.watch("scipy._lib._util", _install_lazyselect)
registry.watch("scipy.stats._continuous_distns", _rebind_lazyselect)
